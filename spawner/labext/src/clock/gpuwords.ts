// The job's GPUs in the status bar, in words: NVML readings from the session's server
// (GET dsportal/session/gpus, spawner/jupyter/session/gpus.py).

export interface IGpuReading {
  index: number;
  name: string;
  utilization: number; // %
  memory_used_mib: number;
  memory_total_mib: number;
  processes: number;
}

export interface IGpuAnswer {
  gpus: IGpuReading[];
  note: string; // why there are no readings
}

// The item's text and tooltip; not shown at all when the job has no GPU.
export function gpuWords(answer: IGpuAnswer): {
  text: string;
  title: string;
  shown: boolean;
} {
  if (!answer.gpus.length) {
    const noGpu = /has no GPU/.test(answer.note);
    return {
      text: noGpu ? '' : 'GPU: no readings',
      title: answer.note,
      shown: !noGpu
    };
  }
  return {
    text: answer.gpus
      .map(
        g =>
          `GPU${g.index} ${g.utilization}% · ${(g.memory_used_mib / 1024).toFixed(1)}/` +
          `${Math.round(g.memory_total_mib / 1024)} GB`
      )
      .join('  '),
    title: answer.gpus
      .map(g => `GPU ${g.index}: ${g.name}, ${g.processes} process(es)`)
      .join('\n'),
    shown: true
  };
}
