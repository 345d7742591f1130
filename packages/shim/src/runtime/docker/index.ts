export { TASK_ID_LABEL } from './container-spec.js';
export { type ContainerInspection, DockerContainers } from './docker-containers.js';
export {
  DockerEngineClient,
  type DockerEngineClientOptions,
  DockerEngineError,
} from './docker-engine-client.js';
export { createDockerRuntime, type DockerRuntimeOptions, type DockerTaskRuntime } from './docker-runtime.js';
