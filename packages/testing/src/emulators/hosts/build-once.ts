/**
 * `build` run at most once per process at a time, its result shared by every caller; a failed
 * build is not remembered, so the next caller tries again (a test image's build, say).
 */
export function buildOnce<T>(build: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | null = null;
  return () => {
    if (pending === null) {
      pending = build();
      pending.catch(() => {
        pending = null;
      });
    }
    return pending;
  };
}
