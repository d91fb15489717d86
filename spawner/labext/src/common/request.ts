// The body of a Jupyter server's answer: its JSON, or {} when it is empty or not JSON (a proxy's HTML page).
export function jsonBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : {};
  } catch {
    return {};
  }
}
