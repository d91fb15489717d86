// The session's server API (dsportal/session/*: spawner/jupyter/{clock,session,usage}/handlers.py).
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { jsonBody } from '../common/request';

export type SessionReply<T> =
  { ok: true; body: T } | { ok: false; body: { message?: string } };

export async function sessionCall<T>(
  path: string,
  init: RequestInit = {}
): Promise<SessionReply<T>> {
  const settings = ServerConnection.makeSettings();
  const response = await ServerConnection.makeRequest(
    URLExt.join(settings.baseUrl, 'dsportal/session', path),
    init,
    settings
  );
  const body = jsonBody(await response.text());
  return { ok: response.ok, body } as SessionReply<T>;
}
