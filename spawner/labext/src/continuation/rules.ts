// What a continued session says in JupyterLab (the server's GET dsportal/continuation,
// spawner/jupyter/continuation/handlers.py): pure, tested in __tests__/continuation.spec.ts.

export interface INotebookReport {
  carried: number;
  not: Record<string, string>;
  refused?: string;
}

export interface IContinuationAnswer {
  continued_from: string; // '' in a session that continues none
  restored: Record<string, INotebookReport>;
  waiting: string[]; // notebooks carried over that JupyterLab has not opened again yet
  terminals?: string[]; // the terminals open again, each in the folder its shell was in
}

// "Continued from job 8: 2 variables back in 1 notebook, 1 not (link: a socket cannot be carried into a new job)."
export function continuedWords(answer: IContinuationAnswer): string {
  const reports = Object.values(answer.restored);
  const carried = reports.reduce((n, r) => n + r.carried, 0);
  const missed: [string, string][] = [];
  reports.forEach(r => missed.push(...Object.entries(r.not || {})));
  const refused = reports.filter(r => r.refused).length;
  const plural = (n: number, word: string) =>
    `${n} ${word}${n === 1 ? '' : 's'}`;
  let text =
    `Continued from job ${answer.continued_from}: ` +
    `${plural(carried, 'variable')} back in ${plural(reports.length, 'notebook')}`;
  if (missed.length) {
    const named = missed
      .slice(0, 3)
      .map(([name, why]) => `${name}: ${why}`)
      .join('; ');
    text += `, ${missed.length} not (${named}${missed.length > 3 ? '; …' : ''})`;
  }
  if (refused) {
    text += `; ${plural(refused, 'kernel')} took nothing back`;
  }
  const terminals = (answer.terminals || []).length;
  if (terminals) {
    text += `; ${plural(terminals, 'terminal')} open again in ${terminals === 1 ? 'its folder' : 'their folders'}`;
  }
  if (answer.waiting.length) {
    text += `. Open ${answer.waiting.join(', ')} to take ${answer.waiting.length === 1 ? 'its' : 'their'} variables back`;
  }
  return text + '.';
}

// Whether there is something to say: a continued session, once a notebook took its variables back or none waits.
export function hasNews(answer: IContinuationAnswer): boolean {
  return (
    !!answer.continued_from &&
    (Object.keys(answer.restored).length > 0 || answer.waiting.length === 0)
  );
}
