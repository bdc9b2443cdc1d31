// Single-file Java helper: Kafka's Errors enum as "code name class category" lines, the list
// src/edge/protocol/error-codes.ts packs (test/unit/errors.test.ts compares the two).
//   java -cp '.kafka/libs/*' scripts/kafka/ErrorTable.java
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.protocol.Errors;

public class ErrorTable {
  public static void main(String[] args) {
    for (Errors e : Errors.values()) {
      ApiException x = e.exception();
      String category = x == null ? "none"
        : x instanceof InvalidMetadataException ? "metadata"
        : x instanceof RetriableException ? "retriable"
        : x instanceof AuthenticationException ? "authentication"
        : x instanceof AuthorizationException ? "authorization"
        : "api";
      System.out.println(e.code() + " " + e.name() + " " + (x == null ? "None" : x.getClass().getSimpleName()) + " " + category);
    }
  }
}
