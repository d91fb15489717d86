// The new tab of an app or TensorBoard (common/request.ts): sent to the server's URL, or closed with its words.
import { openInNewTab, webAddress } from '../common/request';

function answer(status: number, body: string): Promise<Response> {
  return Promise.resolve({
    ok: status >= 200 && status < 300,
    status,
    text: () => Promise.resolve(body)
  } as Response);
}

describe('openInNewTab', () => {
  let tab: {
    close: jest.Mock;
    location: { href: string };
    opener: unknown;
  };
  let alerted: string[];

  beforeEach(() => {
    tab = { close: jest.fn(), location: { href: '' }, opener: window };
    alerted = [];
    jest
      .spyOn(window, 'open')
      .mockImplementation(() => tab as unknown as Window);
    jest
      .spyOn(window, 'alert')
      .mockImplementation(m => alerted.push(String(m)));
  });

  afterEach(() => jest.restoreAllMocks());

  it('sends the tab opened in the click to the URL the server answers', async () => {
    await openInNewTab(
      () => answer(200, '{"url": "/user/alice/apps/1/"}'),
      'failed'
    );
    expect(tab.location.href).toBe('/user/alice/apps/1/');
    expect(tab.close).not.toHaveBeenCalled();
    expect(alerted).toEqual([]);
  });

  it("closes the tab and shows the server's words when it refuses", async () => {
    await openInNewTab(
      () => answer(409, '{"message": "Two apps run already."}'),
      'failed'
    );
    expect(tab.close).toHaveBeenCalled();
    expect(alerted).toEqual(['Two apps run already.']);
  });

  it('says its own words when the answer is no JSON (a proxy page) or has no URL', async () => {
    await openInNewTab(
      () => answer(502, '<html>Bad gateway</html>'),
      'TensorBoard could not be started.'
    );
    await openInNewTab(
      () => answer(200, '{}'),
      'The app could not be started.'
    );
    expect(alerted).toEqual([
      'TensorBoard could not be started.',
      'The app could not be started.'
    ]);
    expect(tab.close).toHaveBeenCalledTimes(2);
  });

  it('takes the opener from the new tab and sends it nowhere but a web address', async () => {
    await openInNewTab(
      () => answer(200, '{"url": "javascript:alert(document.cookie)"}'),
      'The app could not be started.'
    );
    expect(tab.opener).toBeNull();
    expect(tab.location.href).toBe('');
    expect(alerted).toEqual(['The app could not be started.']);
    expect(webAddress('/user/alice/apps/1/')).toBe(true);
    expect(webAddress('https://alice.apps.example/')).toBe(true);
    expect(webAddress('data:text/html,<script>1</script>')).toBe(false);
    expect(webAddress(undefined)).toBe(false);
  });
});
