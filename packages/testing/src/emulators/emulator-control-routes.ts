/**
 * The control routes every cloud emulator serves beside the provider's API: its state
 * (`GET /_emulator/state`) and its faults (`/_emulator/faults`: list, add, clear, remove).
 */
import { EmulatorHttpError, json } from '../emulator/emulator-responses.js';
import type { EmulatorRoute } from '../emulator/emulator-server.js';

/** A control request the emulator refuses: 400 with the message. */
export function controlError(error: unknown): EmulatorHttpError {
  return new EmulatorHttpError(json({ error: (error as Error).message }, 400));
}

export interface ControlledEmulator<Fault> {
  state(): unknown;
  faults: {
    list(): readonly unknown[];
    add(fault: Fault): unknown;
    clear(): void;
    remove(id: string): boolean;
  };
  /** Validates a fault given over HTTP; throws naming the bad field. */
  parseFault(input: unknown): Fault;
}

export function emulatorControlRoutes<Fault>(emulator: ControlledEmulator<Fault>): EmulatorRoute[] {
  const { faults } = emulator;
  return [
    { name: 'state', method: 'GET', path: '/_emulator/state', handle: () => json(emulator.state()) },
    {
      name: 'faults.list',
      method: 'GET',
      path: '/_emulator/faults',
      handle: () => json({ faults: faults.list() }),
    },
    {
      name: 'faults.add',
      method: 'POST',
      path: '/_emulator/faults',
      handle: (request) => {
        try {
          return json(faults.add(emulator.parseFault(request.body)), 201);
        } catch (error) {
          throw controlError(error);
        }
      },
    },
    {
      name: 'faults.clear',
      method: 'DELETE',
      path: '/_emulator/faults',
      handle: () => {
        faults.clear();
        return json({ faults: [] });
      },
    },
    {
      name: 'faults.remove',
      method: 'DELETE',
      path: '/_emulator/faults/:id',
      handle: (request) =>
        faults.remove(request.params.id ?? '')
          ? json({ removed: request.params.id })
          : json({ error: `no fault ${request.params.id}` }, 404),
    },
  ];
}
