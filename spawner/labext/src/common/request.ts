// The body of a Jupyter server's answer: its JSON, or {} when it is empty or not JSON (a proxy's HTML page).
export function jsonBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}

// Start something the session's server runs (an app, TensorBoard) and show it in a new browser tab: the tab is
// opened at once, inside the click, so that pop-up blockers allow it, then sent to the URL the server answers,
// or closed, with the server's words (else `failed`).
export async function openInNewTab(
  start: () => Promise<Response>,
  failed: string
): Promise<void> {
  const tab = window.open('', '_blank');
  if (tab) {
    tab.opener = null; // the app, on its own origin, cannot send this page elsewhere
  }
  const response = await start();
  const body = jsonBody(await response.text()) as {
    url?: string;
    message?: string;
  };
  if (!response.ok || !webAddress(body.url)) {
    if (tab) {
      tab.close();
    }
    window.alert(body.message || failed);
    return;
  }
  if (tab) {
    tab.location.href = body.url as string;
  } else {
    window.location.assign(body.url as string);
  }
}

// An address a tab may be sent to: a path on this server, or an http(s) URL (never javascript: or data:).
export function webAddress(url: unknown): boolean {
  if (typeof url !== 'string' || !url) {
    return false;
  }
  try {
    const parsed = new URL(url, window.location.href);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:';
  } catch {
    return false;
  }
}
