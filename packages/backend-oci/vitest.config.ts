import { packageTestProject } from '../testing/src/vitest/package-project.js';

export default packageTestProject(import.meta.url, '@dstack/backend-oci');
