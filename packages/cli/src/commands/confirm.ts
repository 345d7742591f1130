import type { CliIo } from '../io.js';
import { CommandError } from '../output/command-error.js';

/**
 * True when the user agrees: at once with `-y`, else by asking on the terminal. Without a
 * terminal to ask on, fails asking for `-y` rather than guessing.
 */
export async function confirmAction(io: CliIo, question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!io.confirm) throw new CommandError(`${question} Cannot ask without a terminal: pass -y to confirm`);
  return io.confirm(question);
}
