/**
 * The wire forms the API models share (field names are dstack's, snake_case on the wire).
 */
import * as z from 'zod';
import { boundedConfiguration } from '../configuration/configuration-bounds.js';

/** ISO 8601 date-time strings on the wire. */
export const DateTimeSchema = z.string();

/**
 * A run configuration or profile as sent by clients; the server validates it with the
 * configuration schemas, once its size is known to be within bounds.
 */
export const ConfigurationObjectSchema = boundedConfiguration(z.looseObject({ type: z.string() }));
