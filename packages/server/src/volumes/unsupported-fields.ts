/**
 * Which fields of a volume configuration this server honours (every one): the table the
 * field-decisions test walks. See `field-decisions.ts`.
 */
import type { FieldDecisions } from '../field-decisions.js';

export const VOLUME_FIELD_DECISIONS: FieldDecisions = {
  type: { honoured: 'volumes/create takes volume configurations (volumes.ts)' },
  name: { honoured: 'the volume name, unique per project (volumes.ts)' },
  backend: {
    honoured: "the backend whose Compute creates it; refused when it lacks the 'volumes' capability",
  },
  region: { honoured: 'given to the backend; jobs that mount it are placed in it (job-volumes.ts)' },
  availability_zone: { honoured: 'given to the backend; jobs that mount it are placed in its zone' },
  size: { honoured: 'createVolume (volume-pipeline.ts)' },
  volume_id: { honoured: 'registerVolume; never deleted at the provider (volume-pipeline.ts, volumes.ts)' },
  claim_name: { honoured: 'kubernetes: registerVolume looks the PersistentVolumeClaim up; never deleted' },
  storage_class_name: {
    honoured: 'kubernetes: the StorageClass of the PersistentVolumeClaim createVolume makes',
  },
  access_modes: { honoured: 'kubernetes: the access modes of the PersistentVolumeClaim createVolume makes' },
  read_only: { honoured: "kubernetes: the job pod's volume mount is read-only" },
  auto_cleanup_duration: { honoured: 'the volume pipeline deletes it after that long unattached' },
  tags: { honoured: 'the configuration reaches the backend, which tags what it creates', subtree: true },
};
