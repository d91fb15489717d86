// A task run again and again, never two at once: a run asked for while one is under way happens
// right after it, and the next run is planned only when the last one is over.
export class Repeat {
  // delayMs is a function: the pace may change (a panel shown or hidden).
  constructor(
    private readonly task: () => Promise<void> | void,
    private readonly delayMs: () => number
  ) {}

  start(): Promise<void> {
    this.stopped = false;
    return this.now();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
  }

  now(): Promise<void> {
    window.clearTimeout(this.timer);
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.runUntilDone();
    return this.running;
  }

  private async runUntilDone(): Promise<void> {
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

  private timer = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
}
