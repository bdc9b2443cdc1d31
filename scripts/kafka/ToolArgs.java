import java.util.Properties;

// Options the Java helpers (Reader, Admin, Produce) share, so --sasl and --prop mean the same in each.
// Compiled together with them by kafka.mjs (toolsClasspath).
final class ToolArgs {
    private ToolArgs() {}

    // --sasl picks SASL_PLAINTEXT unless --prop chose a protocol (SASL_SSL); OAUTHBEARER logs in with an
    // unsecured token whose sub is USER (PASSWORD unused), which the test brokers' validator accepts.
    static void sasl(Properties p, String mech, String user, String pass) {
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", mech);
        String jaas;
        if (mech.equals("OAUTHBEARER"))
            jaas = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"" + user + "\";";
        else
            jaas = (mech.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule") + " required username=\"" + user + "\" password=\"" + pass + "\";";
        p.put("sasl.jaas.config", jaas);
    }

    static void prop(Properties p, String kv) {
        int eq = kv.indexOf('=');
        if (eq <= 0) { System.err.println("--prop needs key=value, got " + kv); System.exit(2); }
        p.put(kv.substring(0, eq), kv.substring(eq + 1));
    }

    /** A JSON string literal (null for null): the helpers print JSON lines the tests parse. */
    static String json(String s) {
        if (s == null) return "null";
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c)); else sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
