import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  ApiException, AuthenticationException, AuthorizationException, BufferExhaustedException, CLASSES, InvalidMetadataException,
  KafkaEdgeError, NetworkException, NotLeaderOrFollowerException, OutOfOrderSequenceException, ProducerFencedException,
  RecordTooLargeException, RetriableException, TimeoutException, TopicAuthorizationException, UnknownProducerIdException,
} from '../../src/edge/errors.js'
import { allErrors, apiError, errorInfo, exceptionClass } from '../../src/edge/protocol/index.js'
import { KAFKA_LIBS, javaAvailable } from '../helpers/codec-harness.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const CATEGORY_BASE = {
  retriable: RetriableException, metadata: InvalidMetadataException, authentication: AuthenticationException,
  authorization: AuthorizationException, api: ApiException, none: ApiException,
} as const

// The packed table in error-codes.ts against the Errors enum of the kafka-clients jar the tests run
// Kafka with: every code, its protocol name, its Java class and where that class sits.
describe.skipIf(!javaAvailable())("the error table is Kafka 4.4's Errors enum", () => {
  it('code, name, Java class and category of every entry', () => {
    const java = execFileSync('java', ['-cp', `${KAFKA_LIBS}/*`, path.join(ROOT, 'scripts/kafka/ErrorTable.java')], { timeout: 120_000 })
      .toString().trim().split('\n')
    expect(java.length).toBeGreaterThan(130)
    expect(allErrors().map((e) => `${e.code} ${e.name} ${e.exception} ${e.category}`)).toEqual(java)
    expect(errorInfo(137).name).toBe('UNKNOWN_ERROR_CODE_137')
  }, 120_000)
})

describe('every broker error code is an instance of its Java-named class and of its category', () => {
  it.each(allErrors().filter((e) => e.code !== 0).map((e) => [e.code, e.exception, e.category] as const))('%i -> %s (%s)', (code, exception) => {
    const info = allErrors().find((e) => e.code === code)!
    const err = apiError(code, 'Produce', 'broker says why')
    expect(err).toBeInstanceOf(exceptionClass(info))
    expect(err).toBeInstanceOf(CATEGORY_BASE[info.category])
    expect(err).toBeInstanceOf(ApiException)
    expect(err).toBeInstanceOf(KafkaEdgeError)
    expect(err.name).toBe(exception)
    expect(exceptionClass(info).name).toBe(exception)
    expect(err.code).toBe(code)
    expect(err.errorName).toBe(info.name)
    expect(err.retriable).toBe(info.category === 'retriable' || info.category === 'metadata')
    expect(err.message).toBe(`Produce failed with ${info.name} (${code}): broker says why`)
    if (exception in CLASSES) expect(exceptionClass(info)).toBe((CLASSES as Record<string, unknown>)[exception])
  })

  it('the classes users catch by name are the ones brokers errors come back as', () => {
    expect(apiError(10, 'Produce')).toBeInstanceOf(RecordTooLargeException)
    expect(apiError(90, 'Produce')).toBeInstanceOf(ProducerFencedException)
    expect(apiError(6, 'Produce')).toBeInstanceOf(NotLeaderOrFollowerException)
    expect(apiError(29, 'Produce')).toBeInstanceOf(TopicAuthorizationException)
    expect(apiError(59, 'Produce')).toBeInstanceOf(OutOfOrderSequenceException)
    expect(apiError(13, 'Produce')).toBeInstanceOf(NetworkException)
  })

  it('the hierarchy mirrors Java where it matters to a catch block', () => {
    expect(new UnknownProducerIdException('x')).toBeInstanceOf(OutOfOrderSequenceException)
    expect(new NetworkException('x')).toBeInstanceOf(InvalidMetadataException)
    expect(new NetworkException('x').retriable).toBe(true)
    expect(new BufferExhaustedException('x')).toBeInstanceOf(TimeoutException)
    expect(new TimeoutException('x')).toBeInstanceOf(RetriableException)
  })
})

describe('error names', () => {
  it('every declared class names itself and its instances', () => {
    for (const [name, cls] of Object.entries(CLASSES)) {
      expect(cls.name).toBe(name)
      expect(Object.getOwnPropertyDescriptor(cls.prototype, 'name')?.value).toBe(name)
    }
  })

  it('survive a minified bundle (a bundler renames the classes)', async () => {
    const out = await build({
      stdin: {
        contents: `import { apiError } from './src/edge/protocol/index.ts'; import { SaslAuthenticationException, ConfigException } from './src/edge/errors.ts'
          globalThis.__names = [new SaslAuthenticationException('x').name, new ConfigException('y').name, apiError(6, 'Produce').name, apiError(118, 'x').name, String(new ConfigException('z')).split(':')[0]]`,
        resolveDir: ROOT, loader: 'ts',
      },
      bundle: true, minify: true, format: 'esm', write: false, platform: 'neutral',
    })
    const code = out.outputFiles[0]!.text
    expect(code).not.toMatch(/class SaslAuthenticationException/)
    await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)
    expect((globalThis as { __names?: string[] }).__names).toEqual(['SaslAuthenticationException', 'ConfigException', 'NotLeaderOrFollowerException', 'TelemetryTooLargeException', 'ConfigException'])
  })
})

describe('the producer error policy', () => {
  it('refreshes metadata exactly for the InvalidMetadataException codes', async () => {
    const { invalidatesMetadata } = await import('../../src/edge/producer/error-policy.js')
    const metadata = allErrors().filter((e) => invalidatesMetadata(e.code)).map((e) => e.code)
    expect(metadata).toEqual(allErrors().filter((e) => new (exceptionClass(e))('x') instanceof InvalidMetadataException).map((e) => e.code))
    expect(metadata).toContain(100) // UNKNOWN_TOPIC_ID
    expect(metadata).toContain(13) // NETWORK_EXCEPTION
    expect(metadata).not.toContain(76) // UNSUPPORTED_COMPRESSION_TYPE says nothing about the leader
  })

  it('one fatal set: the same for idempotent and transactional producers but for INVALID_PRODUCER_ID_MAPPING', async () => {
    const { isFatal } = await import('../../src/edge/producer/error-policy.js')
    const fatal = (transactional: boolean) => allErrors().filter((e) => isFatal(e.code, { transactional })).map((e) => e.code)
    expect(fatal(true)).toEqual([31, 35, 53, 90])
    expect(fatal(false)).toEqual([31, 35, 49, 53, 90])
  })

  it('ambiguous answers and producer-state refusals', async () => {
    const { isAmbiguous, refusesProducerState } = await import('../../src/edge/producer/error-policy.js')
    expect(allErrors().filter((e) => isAmbiguous(e.code)).map((e) => e.code)).toEqual([7, 13, 20])
    expect(allErrors().filter((e) => refusesProducerState(e.code)).map((e) => e.code)).toEqual([47, 48, 49, 90, 120])
  })
})

// One way to name a broker error code in src/: through the table (errorCode('NOT_COORDINATOR'),
// often imported as `code`), never as a bare number beside a code or as a string compared with
// ErrorInfo.name. The scan looks for the shapes such numbers took; relay close codes (codes.ts,
// the WebSocket transport's switch) are another table and not matched.
const BARE_CODE = [
  /\b[\w.]*(?:[cC]ode|err)\s*[!=]==?\s*-?\d+\b/, // code === 35, pr.errorCode !== 0
  /(?<![\w.])-?\d+\s*[!=]==?\s*[\w.]*(?:[cC]ode|err)\b/, // 0 === code
  /\berrorCode:\s*-?\d/, // { errorCode: 0 }
  /\b(?:apiError|errorInfo|errorResponse)\(\s*-?\d/, // apiError(35, ...), errorResponse(13)
  /\bcode\s*=[^;\n]*\?\s*-?\d+\s*:\s*-?\d+/, // const code = timedOut ? 7 : 13
  /\b(?:info|errorInfo\([^)]*\))\.name\s*[!=]==/, // info.name === 'MESSAGE_TOO_LARGE'
  /\berrorName\s*[!=]==\s*'/, // errorName === 'UNKNOWN_PRODUCER_ID'
]

describe('src/ names broker error codes through the one table', () => {
  it('the scan catches each shape a bare code took', () => {
    for (const line of ['if (code === 35) {', 'if (pr.errorCode !== 0 && x)', 'if (0 === hsCode)', '{ index: 1, errorCode: 0 }', 'h.fatalError(apiError(35, `x`))',
      'this.completeBatch(b, errorResponse(13), now)', 'const code = e instanceof TimeoutException ? 7 : 13', "if (info.name === 'DUPLICATE_SEQUENCE_NUMBER')", "if (errorName === 'UNKNOWN_PRODUCER_ID')"]) {
      expect(BARE_CODE.some((re) => re.test(line)), line).toBe(true)
    }
    for (const line of ["if (code === errorCode('NONE'))", 'case 4401: return new AuthenticationException(`relay refused (${code})`)', 'if (batch.attempts === 0)']) {
      expect(BARE_CODE.some((re) => re.test(line)), line).toBe(false)
    }
  })

  it('no bare error-code number or name comparison is left in src/', () => {
    const SRC = path.join(ROOT, 'src')
    const found: string[] = []
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name)
        if (e.isDirectory()) { walk(p); continue }
        if (!e.name.endsWith('.ts') || e.name.endsWith('.generated.ts')) continue
        readFileSync(p, 'utf8').split('\n').forEach((line, i) => {
          if (!/^\s*(?:\/\/|\*)/.test(line) && BARE_CODE.some((re) => re.test(line))) found.push(`${path.relative(SRC, p)}:${i + 1}: ${line.trim()}`)
        })
      }
    }
    walk(SRC)
    expect(found).toEqual([])
  })
})
