// What the runs API answers and takes (spawner/hub/runs/handlers.py, forwarded by spawner/jupyter/runs/handlers.py).

// One row of GET dsportal/runs: a Slurm job of the user's, run by the portal or not (spawner/hub/runs/board.py).
export interface IJob {
  job_id: string;
  name: string;
  portal: boolean; // submitted by "Run as a job…"
  kind: string; // "notebook", "python", "shell"; "session" for a JupyterLab session; '' for another job
  path: string;
  state: string; // Slurm's word: PENDING, RUNNING, COMPLETED, ...
  words: string; // what the job is doing, in a sentence
  active: boolean;
  partition: string;
  nodes: number;
  node_list: string;
  gpus: number;
  elapsed: string;
  time_left: string;
  submitted: string; // ISO time
  ended: string; // ISO time
  why: string; // how it ended, in words
  summary: string;
  output: string; // the path of what it wrote
  log: string;
  can_cancel: boolean;
  can_again: boolean;
  sweep?: ISweepRow | null; // a sweep (one Slurm job array) is one row; null for a single run
}

// What a sweep's row says of its tasks (spawner/hub/runs/board.py).
export interface ISweepRow {
  tasks: number;
  at_once: number;
  varied: string[]; // the parameters with more than one value
  counts: Record<SweepCount, number>;
  objective: string;
  best: 'max' | 'min';
}

export type SweepCount =
  'waiting' | 'running' | 'completed' | 'failed' | 'cancelled' | 'other';

// One task of a sweep, a line of GET dsportal/runs/ID/tasks.
export interface ISweepTask {
  task: number;
  job_id: string; // "123_4"
  parameters: Record<string, unknown>;
  state: string;
  active: boolean;
  words: string;
  why: string;
  elapsed: string;
  results: Record<string, unknown>;
  results_error: string;
  output: string;
  log: string;
  can_cancel: boolean;
}

// GET dsportal/runs/ID/tasks: one sweep's table.
export interface ISweepTasks {
  job_id: string;
  path: string;
  varied: string[];
  parameters: string[]; // every name set by the grid, in grid order
  results: string[]; // every result name seen, first seen first
  objective: string;
  best: 'max' | 'min';
  best_task: number | null;
  tasks: ISweepTask[];
  error: string; // Slurm or its accounting did not answer
}

export interface IJobList {
  jobs?: IJob[]; // a page: the newest 100 unless asked (?limit=, ?offset=)
  total?: number; // rows in all pages
  error?: string; // Slurm or its accounting did not answer
}

// A parameter of the notebook's cell tagged "parameters" (spawner/notebookparams/); papermill gives
// its default as the source text of the assignment.
export interface IParameter {
  name: string;
  type?: string; // "int", "float", "bool", "str", "list", "dict", "None" or "expression"
  default?: string | null;
  help?: string;
}

// A choice offered by name with its label: a GPU type, a Slurm account, a QOS.
export interface IChoice {
  name: string;
  label: string;
}

export interface IPartition {
  name: string;
  display_name?: string;
  max_gpus: number;
  max_nodes: number;
  gpu_types?: IChoice[]; // the types a job may ask for by name (from Slurm; the admin's labels)
  shares?: IChoice[]; // the shares of a GPU a job may ask for instead of whole GPUs ('1': 'a quarter of a GPU')
}

// GET dsportal/runs/form?path=P: what the dialog offers.
export interface IRunForm {
  path: string;
  kind: string;
  parameters?: IParameter[];
  partitions?: IPartition[];
  defaults?: {
    partition?: string;
    nodes?: number;
    gpus?: number;
    hours?: number;
  };
  max_hours?: number;
  accounts?: IChoice[]; // the user's Slurm accounts, their default first
  qos?: IChoice[]; // the QOS the admin offers
  sweeps?: ISweepLimits;
}

// The admin's limits on sweeps (runs.sweeps), in the form.
export interface ISweepLimits {
  enabled: boolean;
  max_tasks: number;
  max_gpu_hours: number;
  max_at_once: number;
}

// The dialog's fields as the user left them: text, or a checkbox's state.
export type FieldValue = string | boolean;

export interface IRunValues {
  partition: string;
  nodes: string;
  gpus: string;
  hours: string;
  gpu_type: string; // '' for any type
  shards?: string; // '' (or absent) for whole GPUs; else the shares of one GPU
  account: string; // '' for the default
  qos: string; // '' for the default
  parameters: Record<string, FieldValue>;
  sweep?: ISweepValues | null; // the sweep section as the user left it; null when it is off
}

// How a parameter varies in a sweep: one value (its usual field), a list, or a range of numbers.
export type SweepMode = 'value' | 'list' | 'range';

export interface ISweepField {
  mode: SweepMode;
  list: string; // comma-separated
  from: string;
  to: string;
  steps: string;
  scale: 'linear' | 'log';
}

export interface ISweepValues {
  fields: Record<string, ISweepField>;
  sample: string; // '' or '0' for the whole grid
  at_once: string;
  objective: string;
  best: 'max' | 'min';
}

// One entry of a sweep's grid, as the hub takes it.
export type GridEntry =
  | { value: unknown }
  | { values: unknown[] }
  | {
      range: {
        from: number;
        to: number;
        steps: number;
        scale: 'linear' | 'log';
      };
    };

export interface ISweepRequest {
  grid: Record<string, GridEntry>;
  sample?: number;
  at_once?: number;
  objective?: string;
  best?: 'max' | 'min';
}

// POST dsportal/runs
export interface IRunRequest {
  path: string;
  partition: string;
  nodes: number;
  gpus: number;
  hours: number;
  gpu_type?: string;
  shards?: number; // shares of one GPU (Slurm's gres/shard) instead of whole GPUs
  account?: string;
  qos?: string;
  parameters?: Record<string, unknown>; // a single run
  sweep?: ISweepRequest; // a sweep, instead of parameters
}

// GET and POST dsportal/notify: whether the portal mails the user when a job ends.
export interface INotify {
  mail: boolean;
  address: string; // '' when the directory has none
}
