#!/usr/bin/env node
// The test cluster's stand-in for kube-proxy's NodePort, on loopback only and without iptables:
// kube-proxy would rewrite the host's iptables, which this shared sandbox must not have touched.
// Every second it lists the cluster's NodePort Services and, for each port, listens on
// 127.0.0.1:<nodePort> and forwards each connection to a Running, Ready pod the Service selects,
// at its pod IP and target port (pod IPs are reachable from the host over the CNI bridge).
// Started and stopped by ensure-kubernetes.sh.
//
// Usage: node node-port-proxy.mjs <api server URL> <CA file> <client cert file> <client key file>
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect, createServer } from 'node:net';

const [server, caFile, certFile, keyFile] = process.argv.slice(2);
if (!keyFile) {
  console.error('usage: node-port-proxy.mjs <api server URL> <CA file> <client cert file> <client key file>');
  process.exit(2);
}
const tls = { ca: readFileSync(caFile), cert: readFileSync(certFile), key: readFileSync(keyFile) };
const POLL_MS = 1000;

function getJson(path) {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, server), { ...tls, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${path}: ${res.statusCode} ${body.slice(0, 200)}`));
        else resolve(JSON.parse(body));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** nodePort → { namespace, selector, targetPort, server } */
const forwards = new Map();

async function backendOf(forward) {
  const selector = Object.entries(forward.selector)
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
  const pods = await getJson(
    `/api/v1/namespaces/${forward.namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  const ready = (pods.items ?? []).find(
    (pod) =>
      pod.status?.phase === 'Running' &&
      pod.status?.podIP &&
      !pod.metadata?.deletionTimestamp &&
      (pod.status?.conditions ?? []).some(
        (condition) => condition.type === 'Ready' && condition.status === 'True',
      ),
  );
  return ready ? { host: ready.status.podIP, port: forward.targetPort } : null;
}

function listen(nodePort, forward) {
  const proxy = createServer((client) => {
    backendOf(forward).then(
      (target) => {
        if (target === null) {
          client.destroy();
          return;
        }
        const upstream = connect(target.port, target.host);
        client.pipe(upstream).pipe(client);
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
      },
      () => client.destroy(),
    );
  });
  proxy.on('error', (error) => {
    console.error(`node port ${nodePort}: ${error.message}`);
    // Not listening (the port was taken a moment): forget it, so that the next sync tries again.
    if (!proxy.listening && forwards.get(nodePort)?.server === proxy) forwards.delete(nodePort);
  });
  proxy.listen(nodePort, '127.0.0.1');
  return proxy;
}

async function sync() {
  const services = await getJson('/api/v1/services');
  const wanted = new Map();
  for (const service of services.items ?? []) {
    if (service.spec?.type !== 'NodePort' || !service.spec.selector) continue;
    for (const port of service.spec.ports ?? []) {
      if (!port.nodePort || (port.protocol ?? 'TCP') !== 'TCP') continue;
      const targetPort = typeof port.targetPort === 'number' ? port.targetPort : port.port;
      wanted.set(port.nodePort, {
        namespace: service.metadata.namespace,
        selector: service.spec.selector,
        targetPort,
      });
    }
  }
  for (const [nodePort, forward] of forwards) {
    const next = wanted.get(nodePort);
    if (
      next &&
      JSON.stringify({ ...next, server: undefined }) === JSON.stringify({ ...forward, server: undefined })
    ) {
      continue;
    }
    forward.server.close();
    forwards.delete(nodePort);
  }
  for (const [nodePort, forward] of wanted) {
    if (!forwards.has(nodePort)) forwards.set(nodePort, { ...forward, server: listen(nodePort, forward) });
  }
}

async function loop() {
  try {
    await sync();
  } catch (error) {
    console.error(`node-port-proxy: ${error.message}`);
  }
  setTimeout(loop, POLL_MS);
}

loop();
