// Whether JupyterLab's page was opened on a file or folder (/lab/tree/PATH): then JupyterLab's router opens it.

/** `treePath` is JupyterLab's page option of that name: "" for /lab, the path for /lab/tree/PATH. */
export function opensAPath(treePath: string): boolean {
  return treePath.replace(/^\/+/, '') !== '';
}
