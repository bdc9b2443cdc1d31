// registry-reader: the independent reader for kafka-edge's schema registry tests. It decodes
// Confluent-framed record values (one hex string per line on stdin) with franz-go's sr package (the
// header, the Protobuf message indexes, the registry client) and with hamba/avro and protobuf-go's
// dynamicpb (schemas compiled from the registry's .proto text by bufbuild/protocompile), re-encodes
// each value with the same library and prints one JSON line per record:
//
//	{"id":N,"index":[...],"message":"pkg.Msg","value":...,"same":true}
//
// "same" says the re-encoded payload is byte-for-byte the one read: a second serializer agreeing.
//
//	go run . -registry http://127.0.0.1:PORT/apis/ccompat/v7 < values.hex
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

type out struct {
	ID      int    `json:"id"`
	Index   []int  `json:"index,omitempty"`
	Message string `json:"message,omitempty"`
	Value   any    `json:"value"`
	Same    bool   `json:"same"`
	Error   string `json:"error,omitempty"`
	// Again is the re-encoded payload (hex) when it differs from the one read.
	Again string `json:"again,omitempty"`
	Read  string `json:"read,omitempty"`
}

func main() {
	registry := flag.String("registry", "", "Confluent-compatible registry URL")
	flag.Parse()
	cl, err := sr.NewClient(sr.URLs(*registry))
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	var hdr sr.ConfluentHeader
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			fail(err)
		}
		o, err := decode(ctx, cl, &hdr, b)
		if err != nil {
			o.Error = err.Error()
		}
		if err := enc.Encode(o); err != nil {
			fail(err)
		}
	}
}

func decode(ctx context.Context, cl *sr.Client, hdr *sr.ConfluentHeader, b []byte) (out, error) {
	var o out
	id, rest, err := hdr.DecodeID(b)
	if err != nil {
		return o, err
	}
	o.ID = id
	s, err := cl.SchemaByID(ctx, id)
	if err != nil {
		return o, err
	}
	switch s.Type {
	case sr.TypeAvro:
		schema, err := avro.Parse(s.Schema)
		if err != nil {
			return o, err
		}
		var v any
		if err := avro.Unmarshal(schema, rest, &v); err != nil {
			return o, err
		}
		again, err := avro.Marshal(schema, v)
		o.Same = err == nil && bytes.Equal(again, rest)
		if !o.Same {
			o.Again, o.Read = hex.EncodeToString(again), hex.EncodeToString(rest)
			if err != nil {
				o.Again = err.Error()
			}
		}
		o.Value = plain(v)
	case sr.TypeProtobuf:
		index, payload, err := hdr.DecodeIndex(rest, 64)
		if err != nil {
			return o, err
		}
		o.Index = index
		md, err := message(ctx, cl, s, index)
		if err != nil {
			return o, err
		}
		o.Message = string(md.FullName())
		msg := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(payload, msg); err != nil {
			return o, err
		}
		again, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		o.Same = err == nil && bytes.Equal(again, payload)
		if !o.Same {
			o.Again, o.Read = hex.EncodeToString(again), hex.EncodeToString(payload)
		}
		js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
		if err != nil {
			return o, err
		}
		o.Value = json.RawMessage(js)
	case sr.TypeJSON:
		var v any
		if err := json.Unmarshal(rest, &v); err != nil {
			return o, err
		}
		again, _ := json.Marshal(v)
		o.Same = json.Valid(rest) && len(again) > 0
		o.Value = v
	default:
		return o, fmt.Errorf("schema type %v", s.Type)
	}
	return o, nil
}

// message compiles the schema's .proto text and what it references (fetched from the registry by
// subject and version) and walks the message indexes down from the file's top-level messages.
func message(ctx context.Context, cl *sr.Client, s sr.Schema, index []int) (protoreflect.MessageDescriptor, error) {
	files := map[string]string{"main.proto": s.Schema}
	var load func(refs []sr.SchemaReference) error
	load = func(refs []sr.SchemaReference) error {
		for _, r := range refs {
			if _, ok := files[r.Name]; ok {
				continue
			}
			got, err := cl.SchemaByVersion(ctx, r.Subject, r.Version)
			if err != nil {
				return err
			}
			files[r.Name] = got.Schema.Schema
			if err := load(got.Schema.References); err != nil {
				return err
			}
		}
		return nil
	}
	if err := load(s.References); err != nil {
		return nil, err
	}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files),
	})}
	fds, err := c.Compile(context.Background(), "main.proto")
	if err != nil {
		return nil, err
	}
	msgs := fds[0].Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i >= msgs.Len() {
			return nil, fmt.Errorf("message index %v out of range", index)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// plain turns hamba/avro's generic values into JSON: times as RFC 3339 (UTC), durations as
// microseconds, decimals as decimal strings, bytes as base64 (encoding/json's default).
func plain(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plain(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = plain(e)
		}
		return a
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.Microseconds()
	case *big.Rat:
		s := x.FloatString(20)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s
	case big.Rat:
		return plain(&x)
	}
	return v
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "registry-reader:", err)
	os.Exit(1)
}
