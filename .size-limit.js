// Size budgets, checked by `npm run size` and by test/package/shape.test.ts in `npm test`.
// JS is measured as an app would ship it: the entry bundled with esbuild (browser, ESM, minified,
// tree-shaken to the named imports) and gzipped. The WebAssembly core is not in these bundles any
// more (it loads as a separate file), so it has its own line.
const esm = (config) => ({ ...config, format: 'esm', platform: 'browser', target: 'es2022', logLevel: 'error' })

export default [
  {
    name: 'producer core JS (kafka-edge: createProducer + websocket)',
    path: 'dist/edge/index.js',
    import: '{ createProducer, websocket }',
    gzip: true,
    modifyEsbuildConfig: esm,
    // A ceiling at today's size, so it cannot grow unnoticed (issue 25 sets budgets for the SDK and
    // core-lz4.wasm only). History: 43.5 kB, raised step by step to 48.2 kB by the logger/debug
    // setting, the error policy, the resumable producer (checkpoint.ts, DescribeProducers), the
    // observer setting, the relay's producer-id tickets and the Worker merge (48.1 kB measured).
    // Then cut to 41.5 kB without touching the producer's state machine:
    // - package.json sideEffects and a lazily built API-by-key map: unused protocol schemas drop out;
    // - the error table packed as one string of names plus a category letter per code (-0.9 kB);
    // - producer settings as [name, default, parser] rows;
    // - TLS and SASL (security.ts: ssl/sasl checks, SASL mechanisms, SCRAM, AWS signing) installed by
    //   tcp() and cloudflareSockets() when created, so a websocket bundle has none of it (-5.3 kB), then
    //   the ssl/sasl value parsers (PEM, SASL extensions, mechanisms) moved there too (-0.3 kB).
    // What remains: transactions (producer/install.ts, about 6 kB; `npm run size:why` lists it) and the
    // idempotent producer itself (producer, sender, idempotence, accumulator, config, WASM loader, client,
    // protocol). Measured 41.53 kB; 42.87 kB with the per-partition checkpoint takeover
    // (producer/takeover.ts: DescribeProducers asked again until max.block.ms, copies of relabelled
    // records matched to their originals, about 1.3 kB). 43.0 kB with nextTask in clock.ts (zero-delay
    // wakeups that a hidden tab's clamped timers cannot hold back, +0.14 kB); 43.07 kB once the
    // checkpoint carries the relay transport's producer-id ticket both ways (+0.07 kB). 43.18 kB once
    // every broker error code is named through the table (errorCode('NONE') where a bare 0 stood,
    // +0.1 kB; hoisting them into constants came out larger under gzip). 43.22 kB with wasm/core.ts
    // split into core, batch and load (+0.03 kB from the module boundaries) and Producer.leaderAddress,
    // the page-hide beacon's seam (+0.03 kB), less the acks=0 path reusing errorResponse (-0.02 kB).
    // Then the message-woken websocket() write backpressure (+0.06 kB) and the topic-not-created
    // message naming the brokers' answer and auto.create.topics.enable (+0.09 kB); 43.54 kB with the
    // per-topic one-entry caches of the send path (issue 26: fewer instructions per record). 43.61 kB
    // once a retry backing off is sent when its backoff ends (sim seed 1246175: split pieces queued in
    // sequence order, ready() judging the head drain() takes, drain() reporting the backoff it passed
    // over; +0.07 kB, shorter forms came out no smaller under gzip), then initTransactions() waiting
    // max.block.ms for unreachable brokers and a throwing coordinator handler failing its call.
    // 43.70 kB (43,702 B) with send() taking its promise from Promise.withResolvers and a fallback
    // for engines without it (issue 26: no old-to-new stores of the callbacks per record, -1.3%
    // instructions per record). 43.87 kB (43,865 B) with strings written into WASM memory without a
    // TextEncoder.encode each (issue 26: the Worker's record -38% instructions); the sending tab's
    // ceiling of 44 kB (issue 25) still holds. 43.99 kB (43,990 B) with the waiting sends in a queue
    // whose head is an index (Array.shift moved every element past about 16,000 waiting; +0.13 kB,
    // the smallest of the forms tried); the sending tab 43.80 kB. 44.14 kB (44,139 B) with Java's
    // send(record, callback) beside the promise form (issue 26: no promise per record, -9.9%
    // instructions per record); the sending tab 43.96 kB, still under its 44 kB. The sending tab then
    // measured 44,000 B exactly, and a session's send-path work (issue 26) took it to 44,875 B: out
    // again went the one-copy path of closed batches (+411 B, and no gain where checkpoints read every
    // batch before its request, as the SDK's and the Worker's do), a shared buffer for request frames
    // (+173 B), ASCII names written in place with a cached topic lookup (+125 B) and headers taken as
    // given (+61 B); kept, records staged once by send() (+133 B), with utf8Length through TextEncoder
    // for the records it does not stage (-123 B) and Core.recordSize gone (-25 B), and the fixes for sim
    // seeds 2917269 and 3074759 (+26 B): the producer core 44,146 B, the sending tab 43,965 B.
    limit: '44.2 kB',
  },
  {
    name: 'analytics SDK JS loaded with the page (kafka-edge/browser: createAnalytics; the sender loads on demand)',
    path: 'dist/edge/browser/index.js',
    import: '{ createAnalytics }',
    gzip: true,
    // What every tab downloads and parses before track() works: the SDK, its outbox and the sender
    // election. The producer side (browser/sender.ts) is an import() made only by the tab that wins
    // the election, which bundlers ship as a separate chunk; the next entry counts it.
    modifyEsbuildConfig: (config) => esm({ ...config, external: [...config.external ?? [], './sender.js'] }),
    // Budget (issue 25): 8 kB gzip, a ceiling. Segment's core is 30 kB and Snowplow's tracker about
    // 18 kB (gzip). Measured 7.33 kB.
    limit: '8 kB',
  },
  {
    name: 'analytics SDK JS in the sending tab (the above plus the producer chunk)',
    path: 'dist/edge/browser/index.js',
    import: '{ createAnalytics }',
    gzip: true,
    // Bundled as one file (esbuild inlines the import() when it does not split), which is what the
    // sending tab downloads in all.
    modifyEsbuildConfig: esm,
    // Budget (issue 25): 44 kB gzip, a ceiling, beside other SDKs' lazily loaded parts (PostHog's
    // surveys 48.7 kB and recorder 72 kB gzip, RudderStack with all plugins 41.5 KiB Brotli). This entry imports the producer without producer/install.ts and without
    // a TLS transport, so transactions, SASL and the TLS settings checks stay out. Measured 42.39 kB
    // before the cuts listed above (schemas -0.5 kB, error table -1 kB, TLS/SASL settings checks
    // -0.8 kB); now 39.99 kB, of which the SDK itself (analytics.ts, outbox.ts) is about 4 kB and the
    // idempotent producer path the rest. `npm run size:why -- sdk` lists it by module. 41.4 kB with
    // the per-partition checkpoint takeover (producer/takeover.ts, +1.3 kB); 41.9 kB with the
    // compare-and-swap checkpoint saves (two senders at once, +0.45 kB). 42.61 kB once the producer
    // side became an import() (the entry above): inlined, each module reached only through it gets a
    // lazy-init wrapper (+0.66 kB); split, the chunks total 43.1 kB. 42.66 kB with the page-hide
    // beacon's batches in one ordered body per leader; 42.73 kB when the save that follows a hide
    // sends the batches the hide's flush built by beacon too. 42.92 kB once the sender and the SDK wake
    // through nextTask (clock.ts) instead of setTimeout(0), which a hidden Firefox tab clamps to 1 s.
    // 42.96 kB with the producer keeping the relay ticket in the checkpoint (the SDK's own copy went).
    limit: '44 kB',
  },
  // kafka-edge/schema-registry (issue 23), each format on its own with withSerializers(); the producer
  // is counted above. Measured 10.43 kB (Avro), 10.68 kB (Protobuf), 7.61 kB (JSON Schema, whose
  // validator @cfworker/json-schema loads on demand and is not counted); of each, about 4.9 kB is the
  // registry client and the error classes (SchemaRegistryClient alone: 4.86 kB with plain esbuild -> gzip).
  // Lookups through the relay (schema.registry.relay.url/.token, read-only) added 0.37 kB to each:
  // 10.80, 11.06 and 7.97 kB. withSerializers' send(record, callback), the producer's callback form
  // (issue 26), added 0.07 kB to each: 10.87, 11.13 and 8.04 kB.
  {
    name: 'schema registry: Avro (kafka-edge/schema-registry: avroSerializer + withSerializers)',
    path: 'dist/edge/schema-registry/index.js',
    import: '{ avroSerializer, withSerializers }',
    gzip: true,
    modifyEsbuildConfig: esm,
    limit: '10.87 kB',
  },
  {
    name: 'schema registry: Protobuf (protobufSerializer + withSerializers)',
    path: 'dist/edge/schema-registry/index.js',
    import: '{ protobufSerializer, withSerializers }',
    gzip: true,
    modifyEsbuildConfig: esm,
    limit: '11.13 kB',
  },
  {
    name: 'schema registry: JSON Schema (jsonSchemaSerializer + withSerializers)',
    path: 'dist/edge/schema-registry/index.js',
    import: '{ jsonSchemaSerializer, withSerializers }',
    gzip: true,
    modifyEsbuildConfig: (config) => esm({ ...config, external: [...config.external ?? [], '@cfworker/json-schema'] }),
    limit: '8.05 kB',
  },
  {
    name: 'lz4-only WASM (kafka-edge/core-lz4.wasm)',
    path: 'build/core-lz4.wasm',
    disablePlugins: ['@size-limit/esbuild'],
    gzip: true,
    // Budget (issue 25): 6 kB gzip, a ceiling. Measured 5.2 kB.
    limit: '6 kB',
  },
  {
    name: 'default WASM (kafka-edge/core.wasm, all codecs)',
    path: 'build/core.wasm',
    disablePlugins: ['@size-limit/esbuild'],
    gzip: true,
    limit: '21.5 kB',
  },
]
