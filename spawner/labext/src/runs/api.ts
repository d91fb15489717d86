// DS Portal: the Jupyter server's runs API (dsportal/runs, dsportal/notify, dsportal/runs/defaults), as the
// browser calls it.
// Every answer is JSON; a refusal is {"message": "..."} with a 4xx/5xx status, shown to the user as is.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { jsonBody } from '../common/request';
import {
  IJob,
  IJobList,
  INotify,
  IRunForm,
  IRunRequest,
  ISweepTasks
} from './types';

// What the user reads when the server sent no sentence of its own (a proxy's HTML page, no network).
const NO_ANSWER =
  'The Jupyter server did not answer; check your connection and try again.';

export type Reply<T> =
  | { ok: true; status: number; body: T }
  | { ok: false; status: number; body: { message: string } };

async function call<T>(
  path: string,
  init: RequestInit = {}
): Promise<Reply<T>> {
  const settings = ServerConnection.makeSettings();
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      URLExt.join(settings.baseUrl, path),
      init,
      settings
    );
  } catch {
    return { ok: false, status: 0, body: { message: NO_ANSWER } };
  }
  let body = jsonBody(await response.text()) as { message?: string };
  if (!response.ok && !body.message) {
    body = { message: `${NO_ANSWER} (HTTP ${response.status})` };
  }
  return { ok: response.ok, status: response.status, body } as Reply<T>;
}

function post<T>(path: string, body?: object): Promise<Reply<T>> {
  return call<T>(path, { method: 'POST', body: JSON.stringify(body || {}) });
}

export const runsApi = {
  list: () => call<IJobList>('dsportal/runs'),
  form: (path: string) =>
    call<IRunForm>(`dsportal/runs/form?path=${encodeURIComponent(path)}`),
  submit: (request: IRunRequest) =>
    post<{ job: IJob }>('dsportal/runs', request),
  cancel: (jobId: string) =>
    post<{ job_id: string }>(
      `dsportal/runs/${encodeURIComponent(jobId)}/cancel`
    ),
  again: (jobId: string) =>
    post<{ job: IJob }>(`dsportal/runs/${encodeURIComponent(jobId)}/again`),
  log: (jobId: string, lines: number) =>
    call<{ log: string }>(
      `dsportal/runs/${encodeURIComponent(jobId)}/log?lines=${lines}`
    ),
  tasks: (jobId: string) =>
    call<ISweepTasks>(`dsportal/runs/${encodeURIComponent(jobId)}/tasks`),
  // a copy of the notebook beside it whose parameters cell carries these values; answers its path
  makeDefaults: (path: string, parameters: Record<string, unknown>) =>
    post<{ path: string }>('dsportal/runs/defaults', { path, parameters }),
  notify: () => call<INotify>('dsportal/notify'),
  setNotify: (mail: boolean) => post<INotify>('dsportal/notify', { mail })
};
