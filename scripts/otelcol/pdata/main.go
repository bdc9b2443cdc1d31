// Program pdata runs the Collector's own pdata code on what the Worker writes, for the OTLP tests:
//
//	pdata keys                      OTLP/JSON LogsData on stdin: per resource, the key the kafkaexporter
//	                                gives it with partition_logs_by_resource_attributes (xhash.MapHash), in hex
//	pdata decode traces|logs|metrics   one base64 record value per stdin line (otlp_proto): each decoded by
//	                                pdata's protobuf unmarshaler (what the kafkareceiver uses), printed as pdata JSON
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/xhash"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func keys() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	logs, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(in)
	if err != nil {
		fail(err)
	}
	for _, rl := range logs.ResourceLogs().All() {
		h := xhash.MapHash(rl.Resource().Attributes())
		fmt.Println(hex.EncodeToString(h[:]))
	}
}

func decode(signal string, value []byte) ([]byte, error) {
	switch signal {
	case "traces":
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(value)
		if err != nil {
			return nil, err
		}
		return (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	case "logs":
		ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(value)
		if err != nil {
			return nil, err
		}
		return (&plog.JSONMarshaler{}).MarshalLogs(ld)
	case "metrics":
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(value)
		if err != nil {
			return nil, err
		}
		return (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	}
	return nil, fmt.Errorf("unknown signal %q", signal)
}

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "keys" {
		keys()
		return
	}
	if len(os.Args) < 3 || os.Args[1] != "decode" {
		fail(fmt.Errorf("usage: pdata keys | pdata decode traces|logs|metrics"))
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for in.Scan() {
		value, err := base64.StdEncoding.DecodeString(in.Text())
		if err != nil {
			fail(err)
		}
		out, err := decode(os.Args[2], value)
		if err != nil {
			fail(err)
		}
		fmt.Println(string(out))
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
}
