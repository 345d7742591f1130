/**
 * Splits the stream `GET /containers/{id}/logs` returns for a container without a TTY: frames of
 * an 8-byte header (stream type, three zero bytes, big-endian payload size) and the payload.
 * Stdout and stderr are kept in the order Docker wrote them.
 */
export function demultiplexDockerLogs(stream: Buffer): string {
  const chunks: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= stream.length) {
    const streamType = stream[offset];
    const isFrameHeader =
      (streamType === 0 || streamType === 1 || streamType === 2) &&
      stream[offset + 1] === 0 &&
      stream[offset + 2] === 0 &&
      stream[offset + 3] === 0;
    if (!isFrameHeader) {
      // A TTY container's logs are raw text with no frames.
      chunks.push(stream.subarray(offset));
      offset = stream.length;
      break;
    }
    const size = stream.readUInt32BE(offset + 4);
    chunks.push(stream.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  if (offset < stream.length) chunks.push(stream.subarray(offset));
  return Buffer.concat(chunks).toString('utf8');
}
