// Reference AWS_MSK_IAM payloads from Amazon's aws-msk-iam-auth library, for
// test/unit/auth-aws-msk-iam.test.ts to compare src/edge/auth/aws-msk-iam.ts with byte for byte.
//
//   java -cp '.kafka/msk-iam-libs/*' scripts/kafka/MskIamPayload.java < cases.json
//
// stdin: a JSON array of cases
//   {"host": "...", "region": "us-east-1", "accessKeyId": "...", "secretAccessKey": "...",
//    "sessionToken": "..." | null, "userAgent": "...", "timeMs": 1603324800000 | null}
// stdout: one line per case, in order: {"payload": base64 of the exact bytes the library would send}
//
// Fixed time: AWS4SignedPayloadGenerator has no clock to inject. Its signing parameters take the
// SDK's system clock, and its expiry is Instant.now() + 15 min, computed in a private method. So for a
// case with timeMs, this program runs the generator's own private steps (request construction,
// signing parameters, JSON serialization) by reflection and changes only the two time inputs of the
// signing parameters: signingClockOverride = timeMs and expirationTime = timeMs + 15 min, as the
// generator would have computed them at that instant. The signature itself comes from the SDK's
// Aws4Signer.presign, exactly as the library calls it.
//
// A case with "timeMs": null goes through the public, unmodified signedPayload() at the real time
// instead: it checks that the reflective path above left nothing out. The library computes its expiry
// a moment before the signer reads the clock, so across a second boundary it says 899 s: such a run
// is repeated (a rare, sub-millisecond window), so the caller can always expect 900.
//
// The region is the one the library derives from the host (MSK broker names embed it); a case whose
// "region" disagrees fails rather than silently testing another region.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Method;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.signer.Aws4Signer;
import software.amazon.awssdk.auth.signer.params.Aws4PresignerParams;
import software.amazon.awssdk.http.SdkHttpFullRequest;
import software.amazon.msk.auth.iam.internals.AWS4SignedPayloadGenerator;
import software.amazon.msk.auth.iam.internals.AuthenticationRequestParams;

@SuppressWarnings("deprecation") // Aws4Signer: the library signs with it, so the reference must too
public class MskIamPayload {
    static Method privateMethod(String name, Class<?>... types) throws Exception {
        Method m = AWS4SignedPayloadGenerator.class.getDeclaredMethod(name, types);
        m.setAccessible(true);
        return m;
    }

    static byte[] atFixedTime(AWS4SignedPayloadGenerator gen, AuthenticationRequestParams params, long timeMs) throws Exception {
        SdkHttpFullRequest request = (SdkHttpFullRequest) privateMethod("createRequestForSigning", AuthenticationRequestParams.class)
            .invoke(gen, params);
        Aws4PresignerParams libraryParams = (Aws4PresignerParams) privateMethod("createSigningParams", AuthenticationRequestParams.class)
            .invoke(gen, params);
        Instant at = Instant.ofEpochMilli(timeMs);
        Aws4PresignerParams signingParams = libraryParams.toBuilder()
            .signingClockOverride(Clock.fixed(at, ZoneOffset.UTC))
            .expirationTime(at.plus(15, ChronoUnit.MINUTES))
            .build();
        SdkHttpFullRequest signed = Aws4Signer.create().presign(request, signingParams);
        return (byte[]) privateMethod("toPayloadBytes", SdkHttpFullRequest.class, AuthenticationRequestParams.class)
            .invoke(gen, signed, params);
    }

    static byte[] atRealTime(AWS4SignedPayloadGenerator gen, AuthenticationRequestParams params, ObjectMapper json) throws Exception {
        for (int attempt = 0; ; attempt++) {
            byte[] payload = gen.signedPayload(params);
            if ("900".equals(json.readTree(payload).path("x-amz-expires").asText()) || attempt == 4) return payload;
        }
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode cases = json.readTree(System.in);
        AWS4SignedPayloadGenerator gen = new AWS4SignedPayloadGenerator();
        StringBuilder out = new StringBuilder();
        for (JsonNode c : cases) {
            String token = c.path("sessionToken").isTextual() ? c.get("sessionToken").asText() : null;
            AwsCredentials creds = token == null
                ? AwsBasicCredentials.create(c.get("accessKeyId").asText(), c.get("secretAccessKey").asText())
                : AwsSessionCredentials.create(c.get("accessKeyId").asText(), c.get("secretAccessKey").asText(), token);
            AuthenticationRequestParams params = AuthenticationRequestParams.create(c.get("host").asText(), creds, c.get("userAgent").asText());
            String region = c.get("region").asText();
            if (!params.getRegion().id().equals(region)) {
                throw new IllegalArgumentException("the library derives region " + params.getRegion().id() + " from host "
                    + c.get("host").asText() + ", not " + region);
            }
            byte[] payload = c.path("timeMs").isNumber() ? atFixedTime(gen, params, c.get("timeMs").asLong()) : atRealTime(gen, params, json);
            out.append("{\"payload\":\"").append(Base64.getEncoder().encodeToString(payload)).append("\"}\n");
        }
        System.out.print(out);
        System.out.flush();
    }
}
