/**
 * The address an emulator reports for an instance without an emulated host: made up, on a
 * loopback network so that nothing outside the machine is ever contacted, and one per launch.
 * Each emulator has its own `network` (`127.77` Lambda, `127.78` Verda, `127.79` Nebius) so the
 * clouds of one test never report the same address.
 */
export function madeUpAddress(network: `127.${number}`, sequence: number): string {
  return `${network}.${Math.floor(sequence / 250) % 250}.${(sequence % 250) + 2}`;
}
