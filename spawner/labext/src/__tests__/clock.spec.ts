// The session clock's rules (clock/rules.ts) and the GPU item's words (clock/gpuwords.ts).
import { gpuWords } from '../clock/gpuwords';
import {
  IClockAnswer,
  SAVE_EVERY_MS,
  USE_REPORT_MS,
  asSeenBy,
  canExtend,
  clockTime,
  dueWarnings,
  endMoved,
  endWarning,
  hubHome,
  idleSeconds,
  idleWarning,
  idleWarningDue,
  refreshEvery,
  saveDue,
  secondsLeft,
  statusWords,
  useReportDue,
  words
} from '../clock/rules';

// What GET dsportal/session/clock answers for a job that ends at 17:30 with 2 h left.
function anAnswer(changes: Partial<IClockAnswer> = {}): IClockAnswer {
  return {
    job_id: '4711',
    end: '2024-05-01T17:30:00',
    seconds_left: 7200,
    warn_minutes: [30, 10, 5],
    save_minutes: 5,
    save_now: false,
    extend_hours: 2,
    idle_seconds: 0,
    idle_timeout: 3600,
    idle_warning: 600,
    ...changes
  };
}

describe('the time left in words', () => {
  it.each([
    [7200, '2 h'],
    [3600, '1 h'],
    [5400, '1 h 30 min'],
    [3659, '1 h'],
    [3660, '1 h 1 min'],
    [3599, '60 min'],
    [61, '2 min'],
    [60, '1 min'],
    [59.6, '60 s'],
    [59, '59 s'],
    [0.4, '0 s'],
    [-3, '0 s']
  ])('%s s is "%s"', (seconds, expected) => {
    expect(words(seconds)).toBe(expected);
  });

  it('shows the end as a clock time, and nothing without an end', () => {
    expect(clockTime('2024-05-01T17:30:00')).toBe('17:30');
    expect(clockTime('2024-05-01T07:05:59+00:00')).toBe('07:05');
    expect(clockTime(null)).toBe('');
  });
});

describe('the status bar item', () => {
  it('counts down from the answer', () => {
    expect(secondsLeft(anAnswer(), 0)).toBe(7200);
    expect(secondsLeft(anAnswer(), 60.5)).toBe(7139.5);
    expect(secondsLeft(anAnswer({ seconds_left: 30 }), 45)).toBe(0);
  });

  it('has no time left to show without an answer or an end time', () => {
    expect(secondsLeft(null, 0)).toBeNull();
    expect(
      secondsLeft(anAnswer({ seconds_left: null, end: null }), 10)
    ).toBeNull();
  });

  it('says the time left, the end and the offer to extend', () => {
    expect(statusWords(anAnswer(), 7200)).toEqual({
      text: 'Time left: 2 h',
      title:
        'Session job 4711 ends at 17:30 (its Slurm time limit). Open documents are saved before it ends. ' +
        'Click to add 2 h.',
      ending: false
    });
  });

  it('offers no extension where there is none', () => {
    expect(statusWords(anAnswer({ extend_hours: null }), 600).title).toBe(
      'Session job 4711 ends at 17:30 (its Slurm time limit). Open documents are saved before it ends.'
    );
  });

  it('says when Slurm gives no end time', () => {
    expect(
      statusWords(
        anAnswer({ seconds_left: null, end: null, extend_hours: 0 }),
        null
      )
    ).toEqual({
      text: 'Time left: unknown',
      title: 'Slurm gives no end time for this session right now.',
      ending: false
    });
  });

  it('is marked as ending from the save time on', () => {
    expect(statusWords(anAnswer(), 301).ending).toBe(false);
    expect(statusWords(anAnswer(), 300).ending).toBe(true);
    expect(statusWords(anAnswer(), 0).ending).toBe(true);
  });
});

describe('the warnings before the end', () => {
  it('are due once each threshold is reached', () => {
    expect(dueWarnings([30, 10, 5], 1801, new Set())).toEqual([]);
    expect(dueWarnings([30, 10, 5], 1800, new Set())).toEqual([30]);
    expect(dueWarnings([30, 10, 5], 590, new Set())).toEqual([30, 10]);
  });

  it('come once per threshold', () => {
    expect(dueWarnings([30, 10, 5], 590, new Set([30]))).toEqual([10]);
    expect(dueWarnings([30, 10, 5], 590, new Set([30, 10]))).toEqual([]);
  });

  it('come again after an extension moved the end', () => {
    expect(endMoved(anAnswer(), anAnswer({ end: '2024-05-01T19:30:00' }))).toBe(
      true
    );
    expect(endMoved(anAnswer(), anAnswer({ seconds_left: 7100 }))).toBe(false);
    expect(endMoved(null, anAnswer())).toBe(false);
  });

  it('say when the session ends and what happens then', () => {
    expect(endWarning(anAnswer(), 600)).toBe(
      'Your session ends in 10 min, at 17:30 (its time limit). ' +
        'Open documents are saved before then; running kernels stop at the end.'
    );
  });
});

describe('saving before the end', () => {
  it('saves once the server says so, again every 20 s', () => {
    const ending = anAnswer({ save_now: true });
    expect(saveDue(ending, 100000, 0)).toBe(true);
    expect(saveDue(ending, 100000, 100000 - SAVE_EVERY_MS)).toBe(true);
    expect(saveDue(ending, 100000, 100000 - SAVE_EVERY_MS + 1)).toBe(false);
  });

  it('does not save before the server says so', () => {
    expect(saveDue(anAnswer({ save_now: false }), 100000, 0)).toBe(false);
  });
});

describe('asking the server again', () => {
  it('asks every minute (12 ticks of 5 s) far from the end', () => {
    expect(refreshEvery(anAnswer(), 7200, 0)).toBe(12);
    expect(refreshEvery(null, null, null)).toBe(12);
    expect(refreshEvery(anAnswer({ seconds_left: null }), null, null)).toBe(12);
  });

  it('asks every 15 s from a minute before the save time', () => {
    expect(refreshEvery(anAnswer(), 361, 0)).toBe(12);
    expect(refreshEvery(anAnswer(), 360, 0)).toBe(3);
  });

  it('asks every 15 s from a minute before the idle warning', () => {
    // idle stop at 3600 s, its warning 600 s before: from 2940 s idle on
    expect(refreshEvery(anAnswer(), 7200, 2939)).toBe(12);
    expect(refreshEvery(anAnswer(), 7200, 2940)).toBe(3);
  });
});

describe('extending', () => {
  it('is offered where the answer gives hours to add', () => {
    expect(canExtend(anAnswer())).toBe(true);
    expect(canExtend(anAnswer({ extend_hours: null }))).toBe(false);
    expect(canExtend(anAnswer({ extend_hours: 0 }))).toBe(false);
    expect(canExtend(null)).toBe(false);
  });

  it('is the owner’s only: a guest sees no hours to add', () => {
    expect(asSeenBy(anAnswer({ continuable: true }), true)).toEqual(
      anAnswer({ extend_hours: 0, continuable: false })
    );
    expect(asSeenBy(anAnswer(), false)).toEqual(anAnswer());
    expect(canExtend(asSeenBy(anAnswer(), true))).toBe(false);
    // the owner continues a session from the hub's home page (a guest is offered no such thing)
    expect(hubHome('https://localhost:8000', '/hub/')).toBe(
      'https://localhost:8000/hub/home'
    );
    expect(hubHome('', '/hub')).toBe('/hub/home');
  });
});

describe('the idle warning', () => {
  it('counts idle time on from the answer', () => {
    expect(idleSeconds(anAnswer({ idle_seconds: 100 }), 20)).toBe(120);
  });

  it('has nothing to count where an idle session is never stopped', () => {
    expect(idleSeconds(anAnswer({ idle_timeout: 0 }), 20)).toBeNull();
    expect(idleSeconds(null, 20)).toBeNull();
  });

  it('is due from idle_warning seconds before the stop', () => {
    expect(idleWarningDue(anAnswer(), 2999)).toBe(false);
    expect(idleWarningDue(anAnswer(), 3000)).toBe(true);
    expect(idleWarningDue(anAnswer(), 4000)).toBe(true);
    expect(idleWarningDue(anAnswer(), null)).toBe(false);
  });

  it('says how long and what keeps the session', () => {
    expect(idleWarning(anAnswer(), 3000)).toBe(
      'Idle for 50 min; this session will stop in 10 min to free its GPUs — move the mouse or run ' +
        'something to keep it.'
    );
    expect(idleWarning(anAnswer(), 4000)).toContain('will stop in 0 s');
  });
});

describe('reporting the user’s use', () => {
  it('reports use made since the last report, at most every 30 s', () => {
    expect(useReportDue(1000, -USE_REPORT_MS, 1000)).toBe(true);
    expect(useReportDue(-Infinity, -USE_REPORT_MS, 1000)).toBe(false); // no use yet
    expect(useReportDue(40000, 30000, 50000)).toBe(false); // too soon
    expect(useReportDue(40000, 30000, 60000)).toBe(true);
    expect(useReportDue(20000, 30000, 90000)).toBe(false); // nothing new since the report
  });
});

describe('the GPU item', () => {
  it('shows each GPU’s use and memory', () => {
    expect(
      gpuWords({
        gpus: [
          {
            index: 0,
            name: 'NVIDIA A100',
            utilization: 87,
            memory_used_mib: 30720,
            memory_total_mib: 40960,
            processes: 1
          },
          {
            index: 1,
            name: 'NVIDIA A100',
            utilization: 0,
            memory_used_mib: 0,
            memory_total_mib: 40960,
            processes: 0
          }
        ],
        note: ''
      })
    ).toEqual({
      text: 'GPU0 87% · 30.0/40 GB  GPU1 0% · 0.0/40 GB',
      title:
        'GPU 0: NVIDIA A100, 1 process(es)\nGPU 1: NVIDIA A100, 0 process(es)',
      shown: true
    });
  });

  it('is hidden for a job without GPUs', () => {
    expect(
      gpuWords({ gpus: [], note: 'no GPU readings: this session has no GPU' })
    ).toEqual({
      text: '',
      title: 'no GPU readings: this session has no GPU',
      shown: false
    });
  });

  it('says when the GPUs give no readings', () => {
    expect(
      gpuWords({
        gpus: [],
        note: 'no GPU readings: no NVIDIA driver on this node (NVML_ERROR_DRIVER_NOT_LOADED)'
      })
    ).toEqual({
      text: 'GPU: no readings',
      title:
        'no GPU readings: no NVIDIA driver on this node (NVML_ERROR_DRIVER_NOT_LOADED)',
      shown: true
    });
  });
});
