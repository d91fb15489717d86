// DS Portal: whether this page belongs to a guest in a session its owner shared with them. JupyterHub's page
// config names the visitor (hubUser) and the session's owner (hubServerUser). A guest's page leaves out what
// only the owner may do (the server refuses it anyway, spawner/jupyter/sharing/guests.py): extending the
// session and running or cancelling the owner's jobs.
import { PageConfig } from '@jupyterlab/coreutils';

export function isGuest(): boolean {
  const visitor = PageConfig.getOption('hubUser');
  const owner = PageConfig.getOption('hubServerUser');
  return Boolean(visitor && owner && visitor !== owner);
}
