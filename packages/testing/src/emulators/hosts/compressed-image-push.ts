/**
 * Pushing a large local image to a test registry without compressing it at every push: `docker
 * push` gzips every layer each time (a minute for PyTorch's 700 MB), while the layers of one image
 * never change. So the image is saved once per machine (`docker save`), its layers gzipped into a
 * cache beside their config, and each push uploads those blobs and the manifest over the
 * registry's HTTP API (Docker Registry HTTP API v2), as `docker push` would, in seconds.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createGzip } from 'node:zlib';

const run = promisify(execFile);

/** Where the compressed layers are kept between test runs, one folder per image id. */
const DEFAULT_CACHE = '/var/cache/dstack-test/compressed-images';

/** What a cache folder holds besides the blobs: their names, digests and sizes; written last. */
const BLOBS_FILE = 'blobs.json';

const MANIFEST_TYPE = 'application/vnd.docker.distribution.manifest.v2+json';
const CONFIG_TYPE = 'application/vnd.docker.container.image.v1+json';
const LAYER_TYPE = 'application/vnd.docker.image.rootfs.diff.tar.gzip';

interface BlobFile {
  file: string;
  digest: string;
  size: number;
}

interface CompressedImage {
  config: BlobFile;
  layers: BlobFile[];
}

async function fileBlob(file: string): Promise<BlobFile> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return { file, digest: `sha256:${hash.digest('hex')}`, size: (await stat(file)).size };
}

/** `docker save` of `source`, its layers gzipped, in a new folder of `parent`. */
async function saveCompressed(source: string, parent: string): Promise<string> {
  const folder = await mkdtemp(join(parent, '.saving-'));
  try {
    const saved = join(folder, 'saved');
    await mkdir(saved);
    await run('sh', ['-c', 'docker save "$1" | tar -x -C "$2"', 'sh', source, saved], {
      maxBuffer: 1024 * 1024,
      timeout: 600_000,
    });
    const [entry] = JSON.parse(await readFile(join(saved, 'manifest.json'), 'utf8')) as Array<{
      Config: string;
      Layers: string[];
    }>;
    if (!entry) throw new Error(`docker save ${source} wrote no manifest entry`);
    const layers: string[] = [];
    for (const [index, layer] of entry.Layers.entries()) {
      const name = `layer-${index}.tar.gz`;
      await pipeline(
        createReadStream(join(saved, layer)),
        // The fastest level: the layers go to a registry on this machine, where size hardly matters.
        createGzip({ level: 1 }),
        createWriteStream(join(folder, name)),
      );
      layers.push(name);
    }
    await rename(join(saved, entry.Config), join(folder, 'config.json'));
    // Digests and sizes, so that a push does not read the blobs twice; file names relative.
    const described = async (name: string) => ({ ...(await fileBlob(join(folder, name))), file: name });
    const blobs: CompressedImage = {
      config: await described('config.json'),
      layers: await Promise.all(layers.map(described)),
    };
    await writeFile(join(folder, BLOBS_FILE), JSON.stringify(blobs));
    await rm(saved, { recursive: true, force: true });
    return folder;
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The compressed blobs of local image `source`, made on the first call for its image id and kept
 * in `cache` (a folder per id: a rebuilt image gets a new one, and the old one is removed).
 */
export async function compressedImage(source: string, cache = DEFAULT_CACHE): Promise<CompressedImage> {
  const { stdout } = await run('docker', ['image', 'inspect', '-f', '{{.Id}}', source]);
  const id = stdout.trim().replace(/^sha256:/, '');
  const repository = source.replace(/:[^/:]*$/, '').replace(/[^a-z0-9]+/g, '-');
  const parent = join(cache, repository);
  const folder = join(parent, id);
  await mkdir(parent, { recursive: true });
  if (!(await stat(join(folder, BLOBS_FILE)).catch(() => null))) {
    const made = await saveCompressed(source, parent);
    // Another test file may have made it meanwhile: theirs and ours are the same bytes.
    await rename(made, folder).catch(async () => rm(made, { recursive: true, force: true }));
    for (const other of await readdir(parent)) {
      if (other !== id && !other.startsWith('.'))
        await rm(join(parent, other), { recursive: true, force: true });
    }
  }
  const blobs = JSON.parse(await readFile(join(folder, BLOBS_FILE), 'utf8')) as CompressedImage;
  const inFolder = (blob: BlobFile) => ({ ...blob, file: join(folder, blob.file) });
  return { config: inFolder(blobs.config), layers: blobs.layers.map(inFolder) };
}

/** Where and as whom a push goes. */
export interface RegistryEndpoint {
  /** `host:port`, served over TLS. */
  address: string;
  /** The registry's certificate (self-signed). */
  ca: string;
  /** Basic credentials, for a registry that wants them. */
  auth?: { username: string; password: string };
}

function call(
  endpoint: RegistryEndpoint,
  method: string,
  path: string,
  headers: Record<string, string | number> = {},
  body?: Buffer | BlobFile,
): Promise<{ status: number; location: string | undefined; text: string }> {
  const [host, port] = endpoint.address.split(':');
  const authorization = endpoint.auth
    ? {
        authorization: `Basic ${Buffer.from(`${endpoint.auth.username}:${endpoint.auth.password}`).toString('base64')}`,
      }
    : {};
  return new Promise((resolve, reject) => {
    const sent = request(
      { host, port: Number(port), method, path, ca: endpoint.ca, headers: { ...authorization, ...headers } },
      (response) => {
        let text = '';
        response.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
        });
        response.once('end', () =>
          resolve({ status: response.statusCode ?? 0, location: response.headers.location, text }),
        );
      },
    );
    sent.once('error', reject);
    if (body === undefined) sent.end();
    else if (Buffer.isBuffer(body)) sent.end(body);
    else createReadStream(body.file).once('error', reject).pipe(sent);
  });
}

async function uploadBlob(endpoint: RegistryEndpoint, repository: string, blob: BlobFile): Promise<void> {
  const present = await call(endpoint, 'HEAD', `/v2/${repository}/blobs/${blob.digest}`);
  if (present.status === 200) return;
  const started = await call(endpoint, 'POST', `/v2/${repository}/blobs/uploads/`, { 'content-length': 0 });
  if (started.status !== 202 || !started.location) {
    throw new Error(
      `starting the upload of ${blob.digest} to ${repository}: ${started.status} ${started.text}`,
    );
  }
  const location = new URL(started.location, `https://${endpoint.address}`);
  location.searchParams.set('digest', blob.digest);
  const put = await call(
    endpoint,
    'PUT',
    location.pathname + location.search,
    { 'content-type': 'application/octet-stream', 'content-length': blob.size },
    blob,
  );
  if (put.status !== 201)
    throw new Error(`uploading ${blob.digest} to ${repository}: ${put.status} ${put.text}`);
}

/** Uploads `image`'s blobs and its manifest as `{repository}:{tag}` (e.g. `team/tool:v1`). */
export async function pushCompressedImage(
  endpoint: RegistryEndpoint,
  image: CompressedImage,
  name: string,
): Promise<void> {
  const separator = name.lastIndexOf(':');
  const [repository, tag] =
    separator > 0 ? [name.slice(0, separator), name.slice(separator + 1)] : [name, 'latest'];
  for (const blob of [image.config, ...image.layers]) await uploadBlob(endpoint, repository, blob);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST_TYPE,
      config: { mediaType: CONFIG_TYPE, size: image.config.size, digest: image.config.digest },
      layers: image.layers.map((layer) => ({
        mediaType: LAYER_TYPE,
        size: layer.size,
        digest: layer.digest,
      })),
    }),
  );
  const put = await call(
    endpoint,
    'PUT',
    `/v2/${repository}/manifests/${tag}`,
    { 'content-type': MANIFEST_TYPE, 'content-length': manifest.length },
    manifest,
  );
  if (put.status !== 201) throw new Error(`putting the manifest of ${name}: ${put.status} ${put.text}`);
}
