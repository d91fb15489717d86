// What a continued session says in JupyterLab (continuation/rules.ts).
import { continuedWords, hasNews } from '../continuation/rules';

const SOCKET = 'a socket cannot be carried into a new job';

describe('a continued session', () => {
  it('says what came back, what did not and why', () => {
    const answer = {
      continued_from: '8',
      restored: { 'carry/train.ipynb': { carried: 2, not: { link: SOCKET } } },
      waiting: []
    };
    expect(hasNews(answer)).toBe(true);
    expect(continuedWords(answer)).toBe(
      `Continued from job 8: 2 variables back in 1 notebook, 1 not (link: ${SOCKET}).`
    );
    expect(continuedWords({ ...answer, terminals: ['1', '2'] })).toBe(
      `Continued from job 8: 2 variables back in 1 notebook, 1 not (link: ${SOCKET}); ` +
        '2 terminals open again in their folders.'
    );
  });

  it('names the notebooks still to open, and kernels that took nothing back', () => {
    const answer = {
      continued_from: '8',
      restored: {
        'a.ipynb': { carried: 1, not: {} },
        'b.ipynb': { carried: 0, not: {}, refused: 'the kernel did not answer' }
      },
      waiting: ['c.ipynb']
    };
    expect(continuedWords(answer)).toBe(
      'Continued from job 8: 1 variable back in 2 notebooks; 1 kernel took nothing back. ' +
        'Open c.ipynb to take its variables back.'
    );
  });

  it('waits while its notebooks have not opened yet, and says nothing in a session that continues none', () => {
    const waiting = { continued_from: '8', restored: {}, waiting: ['a.ipynb'] };
    expect(hasNews(waiting)).toBe(false);
    expect(hasNews({ continued_from: '', restored: {}, waiting: [] })).toBe(
      false
    );
    expect(hasNews({ continued_from: '8', restored: {}, waiting: [] })).toBe(
      true
    );
  });
});
