// A task run again and again, never two at once: a run asked for while one is under way happens
// right after it, and the next run is planned only when the last one is over.
export class Repeat {
  constructor(task, delayMs) {
    this.task = task;
    this.delayMs = delayMs; // a function: the pace may change (a panel shown or hidden)
    this.timer = 0;
    this.running = null;
    this.again = false;
    this.stopped = true;
  }

  start() {
    this.stopped = false;
    return this.now();
  }

  stop() {
    this.stopped = true;
    window.clearTimeout(this.timer);
  }

  now() {
    window.clearTimeout(this.timer);
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.runUntilDone();
    return this.running;
  }

  async runUntilDone() {
    do {
      this.again = false;
      try {
        await this.task();
      } catch (e) {
        console.warn('DS Portal:', e);
      }
    } while (this.again && !this.stopped);
    this.running = null;
    if (!this.stopped) {
      this.timer = window.setTimeout(() => this.now(), this.delayMs());
    }
  }
}
