/** The images jobs run in when their configuration names none: dstack's base image and dind image. */
import { ConfigurationError } from '@dstack/core';
import { type Environment, stringVariable } from '../environment-variables.js';

export interface ImageSettings {
  /**
   * `DSTACK_DOCKER_BASE_IMAGE` (dstack's setting; this server's older `DSTACK_BASE_IMAGE` when it
   * is unset): the repository of the default image, with its registry, e.g. a mirror's
   * `registry.internal:5000/dstackai/base`. Null: `dstackai/base`.
   */
  baseImage: string | null;
  /** `DSTACK_DOCKER_BASE_IMAGE_VERSION` (dstack's setting): the default image's version. Null: `0.15`. */
  version: string | null;
  /** `DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION` (dstack's setting): its Ubuntu. Null: `24.04`. */
  ubuntuVersion: string | null;
  /** `DSTACK_DIND_IMAGE` (dstack's setting): the image of `docker: true`. Null: `dstackai/dind`. */
  dindImage: string | null;
}

export function readImageSettings(env: Environment): ImageSettings {
  return {
    // dstack's name wins; `DSTACK_BASE_IMAGE` is this server's older name for a mirror's repository.
    baseImage:
      imageRepositoryVariable(env, 'DSTACK_DOCKER_BASE_IMAGE') ??
      imageRepositoryVariable(env, 'DSTACK_BASE_IMAGE'),
    version: imageTagPartVariable(env, 'DSTACK_DOCKER_BASE_IMAGE_VERSION'),
    ubuntuVersion: imageTagPartVariable(env, 'DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION'),
    dindImage: imageReferenceVariable(env, 'DSTACK_DIND_IMAGE'),
  };
}

/** An image repository with its registry and no tag: `registry:5000/dstackai/base`. */
function imageRepositoryVariable(env: Environment, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  const lastPart = value.slice(value.lastIndexOf('/') + 1);
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/.test(value) || lastPart.includes(':') || value.endsWith('/')) {
    throw new ConfigurationError(
      `${name} must be an image repository without a tag (e.g. registry.internal:5000/dstackai/base), got "${value}"`,
      { path: [name] },
    );
  }
  return value;
}

/** An image with its registry and an optional tag: `registry:5000/dstackai/dind:v1`. */
function imageReferenceVariable(env: Environment, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/.test(value) || value.endsWith('/') || value.endsWith(':')) {
    throw new ConfigurationError(
      `${name} must be an image name (e.g. registry.internal:5000/dstackai/dind), got "${value}"`,
      { path: [name] },
    );
  }
  return value;
}

/** A part of an image tag: letters, digits, `.`, `_`. */
function imageTagPartVariable(env: Environment, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  if (!/^[A-Za-z0-9._]+$/.test(value)) {
    throw new ConfigurationError(`${name} must hold only letters, digits, "." and "_", got "${value}"`, {
      path: [name],
    });
  }
  return value;
}
