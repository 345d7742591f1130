import type { Event, ListEventsRequest } from '@dstack/core';
import { Table } from '../components';
import { formatTime } from '../format';
import { useSession } from '../session';
import { useData } from '../use-data';

/** As often as the run's status is asked again: a change shows in both together. */
const REFRESH_MS = 2000;
/** dstack's largest page: a run's whole story unless it retried many times. */
const LIMIT = 100;

/** Who acted: the user's name, or the server itself (a pipeline's transition). */
const actorOf = (event: Event): string =>
  event.actor_user === null
    ? 'system'
    : `${event.actor_user}${event.is_actor_user_deleted ? ' (deleted)' : ''}`;

/** The run's and its jobs' names an event is about (`run web-task`, `job web-task-0-0`). */
const targetsOf = (event: Event): string =>
  event.targets.map((target) => `${target.type} ${target.name}`).join(', ');

/**
 * What happened to the run and its jobs, and who did it (`events/list` within the run, as
 * `dstack event --run`), newest first; asked again while the run is `live`, once more when it ends.
 */
export function RunEvents({ runId, live }: { runId: string; live: boolean }) {
  const { api } = useSession();
  const request: ListEventsRequest = { within_runs: [runId], limit: LIMIT };
  const loaded = useData(
    () => api.post<Event[]>('/api/events/list', request),
    [api, runId],
    live ? REFRESH_MS : 0,
  );
  if (loaded.error && !loaded.data) return <p className="error">{loaded.error}</p>;
  if (!loaded.data) return <p className="muted">Loading…</p>;
  return (
    <div className="events" data-testid="run-events">
      {loaded.error && <p className="error">{loaded.error}</p>}
      <Table head={['Time', 'Actor', 'About', 'Message']} empty="No events.">
        {loaded.data.map((event) => (
          <tr key={event.id} data-event={event.id}>
            <td>{formatTime(event.recorded_at)}</td>
            <td>{actorOf(event)}</td>
            <td>{targetsOf(event)}</td>
            <td className="message">{event.message}</td>
          </tr>
        ))}
      </Table>
    </div>
  );
}
