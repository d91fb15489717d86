// DS Portal: the Jupyter server's jobs API (dsportal/jobs, dsportal/notify), as the browser calls it.
// Every answer is JSON; a refusal is {"message": "..."} with a 4xx/5xx status, shown to the user as is.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

// What the user reads when the server sent no sentence of its own (a proxy's HTML page, no network).
const NO_ANSWER = 'The Jupyter server did not answer; check your connection and try again.';

async function call(path, init) {
  const settings = ServerConnection.makeSettings();
  let response;
  try {
    response = await ServerConnection.makeRequest(URLExt.join(settings.baseUrl, path), init || {}, settings);
  } catch (e) {
    return { ok: false, status: 0, body: { message: NO_ANSWER } };
  }
  const text = await response.text();
  let body;
  try {
    body = text ? JSON.parse(text) : {};
  } catch (e) {
    body = {};
  }
  if (!response.ok && !body.message) {
    body = { message: `${NO_ANSWER} (HTTP ${response.status})` };
  }
  return { ok: response.ok, status: response.status, body };
}

function post(path, body) {
  return call(path, { method: 'POST', body: JSON.stringify(body || {}) });
}

export const jobsApi = {
  list: () => call('dsportal/jobs'),
  form: path => call(`dsportal/jobs/form?path=${encodeURIComponent(path)}`),
  submit: request => post('dsportal/jobs', request),
  cancel: jobId => post(`dsportal/jobs/${encodeURIComponent(jobId)}/cancel`),
  again: jobId => post(`dsportal/jobs/${encodeURIComponent(jobId)}/again`),
  log: (jobId, lines) => call(`dsportal/jobs/${encodeURIComponent(jobId)}/log?lines=${lines}`),
  notify: () => call('dsportal/notify'),
  setNotify: mail => post('dsportal/notify', { mail })
};
