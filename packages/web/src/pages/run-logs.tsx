import { useEffect, useRef, useState } from 'react';
import { decodeLogMessage } from '../api';
import { useSession } from '../session';

/** Lines kept on screen: a chatty run must not grow the page without bound. */
const MAX_LINES = 5000;

/**
 * The run's logs followed live through `logs/stream` (as `dstack attach`/`dstack logs -f`):
 * reconnects with the last `next_token` when the connection drops or the server restarts,
 * and stops at the stream's `run_finished` line.
 */
export function RunLogs({ project, runName }: { project: string; runName: string }) {
  const { api } = useSession();
  const [text, setText] = useState('');
  const [state, setState] = useState<'following' | 'finished' | 'retrying'>('following');
  const box = useRef<HTMLPreElement>(null);

  useEffect(() => {
    const controller = new AbortController();
    let nextToken: string | null = null;
    let finished = false;
    const decoder = new TextDecoder();
    setText('');
    setState('following');
    (async () => {
      while (!finished && !controller.signal.aborted) {
        try {
          await api.streamLogs(
            project,
            { run_name: runName, next_token: nextToken },
            (line) => {
              nextToken = line.next_token ?? nextToken;
              if ('message' in line) {
                const message = decodeLogMessage(line.message, decoder);
                setText((previous) => {
                  const joined = previous + message;
                  const lines = joined.split('\n');
                  return lines.length > MAX_LINES ? lines.slice(-MAX_LINES).join('\n') : joined;
                });
              } else if ('end' in line && line.end === 'run_finished') {
                finished = true;
              }
            },
            controller.signal,
          );
        } catch {
          if (controller.signal.aborted) return;
        }
        if (!finished) {
          setState('retrying');
          await new Promise((resolve) => setTimeout(resolve, 1000));
          setState('following');
        }
      }
      if (finished) setState('finished');
    })();
    return () => controller.abort();
  }, [api, project, runName]);

  // Follow the end of the logs, as a terminal does.
  useEffect(() => {
    const element = box.current;
    if (element) element.scrollTop = element.scrollHeight;
  }, [text]);

  return (
    <>
      <pre className="logs" ref={box} data-testid="run-logs">
        {text || (state === 'finished' ? '(no output)' : 'Waiting for output…')}
      </pre>
      <p className="muted" data-testid="logs-state">
        {state === 'finished'
          ? 'The run is finished.'
          : state === 'retrying'
            ? 'Reconnecting…'
            : 'Following…'}
      </p>
    </>
  );
}
