// A continued session says, once, what its notebooks took back from the job it continues (the server's restore,
// spawner/jupyter/continuation/); the hub's home page continues a session ("Continue in a new job").
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { jsonBody } from '../common/request';
import { IContinuationAnswer, continuedWords, hasNews } from './rules';

const LOOK_MS = 3000;
const LOOK_FOR_MS = 180000; // how long the page waits for the notebooks it reopens to take their variables back

async function asked(): Promise<IContinuationAnswer | null> {
  const settings = ServerConnection.makeSettings();
  const response = await ServerConnection.makeRequest(
    URLExt.join(settings.baseUrl, 'dsportal/continuation'),
    {},
    settings
  );
  return response.ok
    ? (jsonBody(await response.text()) as IContinuationAnswer)
    : null;
}

async function sayOnce(): Promise<void> {
  const until = Date.now() + LOOK_FOR_MS;
  let answer = await asked();
  if (!answer || !answer.continued_from) {
    return;
  }
  const key = `dsportal-continued-${answer.continued_from}`;
  if (window.sessionStorage.getItem(key)) {
    return; // said in this tab already (a reload)
  }
  while (answer && !hasNews(answer) && Date.now() < until) {
    await new Promise(resolve => setTimeout(resolve, LOOK_MS));
    answer = await asked();
  }
  if (answer && hasNews(answer)) {
    window.sessionStorage.setItem(key, '1');
    Notification.info(continuedWords(answer), { autoClose: false });
  }
}

export const continuationPlugin: JupyterFrontEndPlugin<void> = {
  id: 'dsportal:continuation',
  description:
    'A session continued in a new job says what its notebooks took back.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    void app.restored.then(() => sayOnce());
  }
};
