// The retry and refresh rule of the Jobs panel and the job logs (common/repeat.ts): a task run again and
// again, never two at once, the next run planned only when the last one is over.
import { Repeat } from '../common/repeat';

// A task that finishes only when the test says so, counting its runs.
class ATask {
  runs = 0;
  private finishers: (() => void)[] = [];

  run = (): Promise<void> => {
    this.runs++;
    return new Promise(resolve => this.finishers.push(resolve));
  };

  finish(): void {
    const finish = this.finishers.shift();
    if (!finish) {
      throw new Error('no run under way');
    }
    finish();
  }
}

// Lets the promises that are ready run (a finished task's continuation).
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    await Promise.resolve();
  }
}

describe('Repeat', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('runs at once when started, then again after the delay', async () => {
    const task = new ATask();
    const repeat = new Repeat(task.run, () => 10000);
    void repeat.start();
    expect(task.runs).toBe(1);
    task.finish();
    await settle();
    jest.advanceTimersByTime(9999);
    expect(task.runs).toBe(1);
    jest.advanceTimersByTime(1);
    expect(task.runs).toBe(2);
    repeat.stop();
  });

  it('plans the next run only when the last one is over', async () => {
    const task = new ATask();
    const repeat = new Repeat(task.run, () => 1000);
    void repeat.start();
    jest.advanceTimersByTime(60000); // a slow answer: no second run while the first is under way
    expect(task.runs).toBe(1);
    task.finish();
    await settle();
    jest.advanceTimersByTime(1000);
    expect(task.runs).toBe(2);
    repeat.stop();
  });

  it('runs once more right after a run asked for while one is under way', async () => {
    const task = new ATask();
    const repeat = new Repeat(task.run, () => 10000);
    const first = repeat.start();
    const asked = [repeat.now(), repeat.now(), repeat.now()];
    expect(asked.every(p => p === first)).toBe(true); // they wait on the run under way
    expect(task.runs).toBe(1);
    task.finish();
    await settle();
    expect(task.runs).toBe(2); // the three asks make one run more, not three
    task.finish();
    await first;
    expect(task.runs).toBe(2);
    repeat.stop();
  });

  it('runs now when asked between two runs, and plans the next from then', async () => {
    const task = new ATask();
    const repeat = new Repeat(task.run, () => 10000);
    void repeat.start();
    task.finish();
    await settle();
    jest.advanceTimersByTime(4000);
    void repeat.now();
    expect(task.runs).toBe(2);
    task.finish();
    await settle();
    jest.advanceTimersByTime(6000); // the timer planned after the first run was cleared
    expect(task.runs).toBe(2);
    jest.advanceTimersByTime(4000);
    expect(task.runs).toBe(3);
    repeat.stop();
  });

  it('reads the delay for each run, so the pace can change', async () => {
    const task = new ATask();
    let delay = 10000;
    const repeat = new Repeat(task.run, () => delay);
    void repeat.start();
    task.finish();
    await settle();
    delay = 30000; // the panel was hidden: the timer already planned keeps its 10 s
    jest.advanceTimersByTime(10000);
    expect(task.runs).toBe(2);
    task.finish();
    await settle();
    jest.advanceTimersByTime(29999);
    expect(task.runs).toBe(2);
    jest.advanceTimersByTime(1);
    expect(task.runs).toBe(3);
    repeat.stop();
  });

  it('goes on after a run that failed', async () => {
    const warn = jest
      .spyOn(console, 'warn')
      .mockImplementation(() => undefined);
    let runs = 0;
    const repeat = new Repeat(
      () => {
        runs++;
        return Promise.reject(new Error('no answer'));
      },
      () => 1000
    );
    await repeat.start();
    expect(warn).toHaveBeenCalledWith('DS Portal:', new Error('no answer'));
    jest.advanceTimersByTime(1000);
    expect(runs).toBe(2);
    repeat.stop();
    await settle();
    expect(warn).toHaveBeenCalledTimes(2);
    warn.mockRestore();
  });

  it('runs no more once stopped, nor after the run under way', async () => {
    const task = new ATask();
    const repeat = new Repeat(task.run, () => 1000);
    const first = repeat.start();
    void repeat.now(); // asked again: would run right after this one
    repeat.stop();
    task.finish();
    await first;
    jest.advanceTimersByTime(60000);
    expect(task.runs).toBe(1);
  });

  it('starts again after a stop', async () => {
    const task = new ATask();
    const repeat = new Repeat(task.run, () => 1000);
    void repeat.start();
    task.finish();
    await settle();
    repeat.stop();
    jest.advanceTimersByTime(5000);
    expect(task.runs).toBe(1);
    void repeat.start();
    expect(task.runs).toBe(2);
    task.finish();
    await settle();
    jest.advanceTimersByTime(1000);
    expect(task.runs).toBe(3);
    repeat.stop();
  });
});
