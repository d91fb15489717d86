// When the session's page opens the launcher itself (session/plugin.ts): not for a URL naming a file or folder.
import { opensAPath } from '../session/treepath';

describe('opensAPath', () => {
  it('is false for the lab itself', () => {
    expect(opensAPath('')).toBe(false);
    expect(opensAPath('/')).toBe(false);
  });
  it('is true for a file or a folder', () => {
    expect(opensAPath('templates/pytorch-mnist.ipynb')).toBe(true);
    expect(opensAPath('/templates')).toBe(true);
  });
});
