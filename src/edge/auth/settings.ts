import { ConfigException } from '../errors.js'
import { awsMskIam, type AwsCredentials } from './aws-msk-iam.js'
import type { SaslMechanism } from './mechanism.js'
import { oauthBearer, parseJaasConfig, plain, type OAuthBearerToken } from './sasl.js'
import { scram } from './scram.js'

const JAAS_MODULES: Record<string, string> = {
  PLAIN: 'org.apache.kafka.common.security.plain.PlainLoginModule',
  'SCRAM-SHA-256': 'org.apache.kafka.common.security.scram.ScramLoginModule',
  'SCRAM-SHA-512': 'org.apache.kafka.common.security.scram.ScramLoginModule',
}

/** The SASL mechanism the sasl.* producer settings describe (security.protocol SASL_*). */
export function saslFromSettings(get: <T>(k: string) => T, given: Map<string, unknown>): SaslMechanism {
  const mechanism = get<string | null>('sasl.mechanism')
  if (mechanism === null) {
    throw new ConfigException("sasl.mechanism is required with SASL_PLAINTEXT / SASL_SSL (Kafka's default, GSSAPI, is not supported): " +
      'set PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM')
  }
  const misplaced = (keys: string[]) => {
    const found = keys.filter((k) => given.has(k))
    if (found.length > 0) {
      throw new ConfigException(`${found.join(', ')} ${found.length > 1 ? 'do' : 'does'} not apply to sasl.mechanism ${mechanism}; remove ${found.length > 1 ? 'them' : 'it'}`)
    }
  }
  if (mechanism === 'PLAIN' || mechanism === 'SCRAM-SHA-256' || mechanism === 'SCRAM-SHA-512') {
    misplaced(['sasl.oauthbearer.token.provider', 'sasl.oauthbearer.extensions', 'sasl.aws.credentials.provider', 'sasl.aws.region'])
    let username = get<string | null>('sasl.username')
    let password = get<string | null>('sasl.password')
    const jaas = get<string | null>('sasl.jaas.config')
    if (jaas !== null) {
      if (username !== null || password !== null) throw new ConfigException('set either sasl.jaas.config or sasl.username/sasl.password, not both')
      let parsed: ReturnType<typeof parseJaasConfig>
      try { parsed = parseJaasConfig(jaas) } catch (e) { throw new ConfigException(`sasl.jaas.config does not parse: ${(e as Error).message}`) }
      if (parsed.loginModule !== JAAS_MODULES[mechanism]) {
        throw new ConfigException(`sasl.jaas.config names ${parsed.loginModule}, but sasl.mechanism ${mechanism} needs ${JAAS_MODULES[mechanism]}`)
      }
      username = parsed.options.username ?? null
      password = parsed.options.password ?? null
    }
    if (username === null || password === null) {
      throw new ConfigException(`sasl.mechanism ${mechanism} needs sasl.username and sasl.password (or a sasl.jaas.config with username= and password=)`)
    }
    return mechanism === 'PLAIN' ? plain({ username, password }) : scram({ hash: mechanism === 'SCRAM-SHA-256' ? 'SHA-256' : 'SHA-512', username, password })
  }
  if (mechanism === 'OAUTHBEARER') {
    misplaced(['sasl.username', 'sasl.password', 'sasl.jaas.config', 'sasl.aws.credentials.provider', 'sasl.aws.region'])
    const tokenProvider = get<(() => Promise<OAuthBearerToken>) | null>('sasl.oauthbearer.token.provider')
    if (!tokenProvider) throw new ConfigException('sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.token.provider: a function returning Promise<{ token, lifetimeMs }>')
    const extensions = get<Record<string, string> | null>('sasl.oauthbearer.extensions') ?? {}
    try { return oauthBearer({ tokenProvider, extensions }) } catch (e) { throw new ConfigException(`sasl.oauthbearer.extensions: ${(e as Error).message}`) }
  }
  misplaced(['sasl.username', 'sasl.password', 'sasl.jaas.config', 'sasl.oauthbearer.token.provider', 'sasl.oauthbearer.extensions'])
  const credentials = get<(() => Promise<AwsCredentials>) | null>('sasl.aws.credentials.provider')
  const region = get<string | null>('sasl.aws.region')
  if (!credentials || !region) {
    throw new ConfigException('sasl.mechanism AWS_MSK_IAM needs sasl.aws.region and sasl.aws.credentials.provider ' +
      '(a function returning { accessKeyId, secretAccessKey, sessionToken? })')
  }
  return awsMskIam({ region, credentials })
}
