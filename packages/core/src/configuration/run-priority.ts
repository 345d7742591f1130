/**
 * Run priorities, apart from the run configuration schemas: `dstack ps` shows a run's priority
 * without building those schemas (issue 37).
 */

/** Lowest and highest run priority, and dstack's default (`RUN_PRIORITY_DEFAULT`). */
export const RUN_PRIORITY_MIN = 0;
export const RUN_PRIORITY_MAX = 100;
export const RUN_PRIORITY_DEFAULT = 0;
