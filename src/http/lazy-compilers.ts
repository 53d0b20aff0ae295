import type SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { lazyRequire } from '../lazy-require.ts';

// fast-json-stringify (and the Ajv it brings) loads with the first serializer compiled.
const selector = lazyRequire<typeof SerializerSelector>('@fastify/fast-json-stringify-compiler');

/**
 * Fastify compiles every route's response serializers (fast-json-stringify) when the server
 * starts: with a few hundred routes that was most of the start-up's CPU. This factory hands
 * Fastify a serializer per route and status that compiles on its first response instead, then
 * calls the compiled function directly; the output is the same. Used as Fastify's
 * `schemaController.compilersFactory.buildSerializer`.
 */
export function lazySerializerFactory(): SerializerSelector.SerializerFactory {
  return (externalSchemas, options) => {
    let compile: SerializerSelector.SerializerCompiler | null = null;
    return (route) => {
      let serialize: SerializerSelector.Serializer | null = null;
      return (doc: unknown) => (serialize ??= (compile ??= selector()()(externalSchemas, options))(route))(doc);
    };
  };
}
