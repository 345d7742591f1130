import { defineConfig } from 'vite';

// No React plugin: esbuild compiles the JSX (the plugin only adds fast refresh for `vite dev`).
export default defineConfig({
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Hashed file names under assets/: the server caches them for a year (static-files.ts).
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    // `pnpm --filter @dstack/web exec vite` against a server on the default port.
    proxy: { '/api': 'http://127.0.0.1:8000' },
  },
});
