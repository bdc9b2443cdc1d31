// Single-file Java helper: Kafka's own codec classes (kafka-clients) compress / decompress stdin to stdout.
//   java -cp '.kafka/libs/*' scripts/kafka/Codec.java decompress <gzip|snappy|lz4|zstd> < in > out
//   java -cp '.kafka/libs/*' scripts/kafka/Codec.java compress <gzip|snappy|lz4|zstd> [level] < in > out
// Batch mode (one JVM for many files): `... Codec.java batch` reads lines "op codec level in out" from stdin.
// Exit code 0 on success; 2 on a codec error (message on stderr).
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.file.*;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.ByteBufferOutputStream;

public class Codec {
  static final byte MAGIC_V2 = 2;

  static Compression build(String codec, Integer level) {
    switch (codec) {
      case "gzip": { var b = Compression.gzip(); if (level != null) b.level(level); return b.build(); }
      case "snappy": return Compression.snappy().build();
      case "lz4": { var b = Compression.lz4(); if (level != null) b.level(level); return b.build(); }
      case "zstd": { var b = Compression.zstd(); if (level != null) b.level(level); return b.build(); }
      default: throw new IllegalArgumentException("unknown codec " + codec);
    }
  }

  static byte[] compress(String codec, Integer level, byte[] in) throws IOException {
    ByteBufferOutputStream bbos = new ByteBufferOutputStream(Math.max(64, in.length / 2));
    try (OutputStream os = build(codec, level).wrapForOutput(bbos, MAGIC_V2)) {
      os.write(in);
    }
    ByteBuffer buf = bbos.buffer();
    buf.flip();
    byte[] out = new byte[buf.remaining()];
    buf.get(out);
    return out;
  }

  static byte[] decompress(String codec, byte[] in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, in.length * 4));
    try (InputStream is = build(codec, null).wrapForInput(ByteBuffer.wrap(in), MAGIC_V2, BufferSupplier.NO_CACHING)) {
      byte[] chunk = new byte[16384];
      int n;
      while ((n = is.read(chunk, 0, chunk.length)) > 0) out.write(chunk, 0, n);
    }
    return out.toByteArray();
  }

  static byte[] run(String op, String codec, Integer level, byte[] in) throws IOException {
    if (op.equals("compress")) return compress(codec, level, in);
    if (op.equals("decompress")) return decompress(codec, in);
    throw new IllegalArgumentException("unknown op " + op);
  }

  public static void main(String[] args) throws Exception {
    if (args.length >= 1 && args[0].equals("batch")) {
      BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
      String line;
      while ((line = r.readLine()) != null) {
        if (line.isBlank()) continue;
        String[] p = line.trim().split("\\s+");
        try {
          Integer level = p[2].equals("-") ? null : Integer.valueOf(p[2]);
          Files.write(Paths.get(p[4]), run(p[0], p[1], level, Files.readAllBytes(Paths.get(p[3]))));
          System.out.println("ok " + p[4]);
        } catch (Exception e) {
          System.out.println("error " + p[4] + " " + e.toString().replace('\n', ' '));
        }
        System.out.flush();
      }
      return;
    }
    if (args.length < 2) {
      System.err.println("usage: Codec.java <compress|decompress> <gzip|snappy|lz4|zstd> [level] < in > out");
      System.exit(64);
    }
    Integer level = args.length > 2 ? Integer.valueOf(args[2]) : null;
    try {
      byte[] out = run(args[0], args[1], level, System.in.readAllBytes());
      System.out.write(out);
      System.out.flush();
    } catch (Exception e) {
      System.err.println(e.toString());
      System.exit(2);
    }
  }
}
