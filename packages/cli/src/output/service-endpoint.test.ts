import { describe, expect, it } from 'vitest';
import { formatServiceEndpoint } from './service-endpoint.js';

describe('formatServiceEndpoint', () => {
  it('makes the in-server proxy path absolute on the server URL', () => {
    expect(
      formatServiceEndpoint(
        { url: '/proxy/services/main/app/', model: null, options: {} },
        'http://127.0.0.1:3000/',
      ),
    ).toBe('Service is published at:\n  http://127.0.0.1:3000/proxy/services/main/app/\n');
  });

  it('adds the model endpoint and keeps absolute (gateway) URLs as they are', () => {
    expect(
      formatServiceEndpoint(
        {
          url: 'https://llm.gateway.example/',
          model: { name: 'org/model-7b', base_url: '/proxy/services/main/llm/v1', type: 'chat' },
          options: {},
        },
        'http://dstack.example',
      ),
    ).toBe(
      'Service is published at:\n  https://llm.gateway.example/\n' +
        'Model org/model-7b is published at:\n  http://dstack.example/proxy/services/main/llm/v1\n',
    );
  });
});
