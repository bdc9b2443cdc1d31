// Program keys prints, for OTLP/JSON LogsData on stdin, the key the Collector's kafkaexporter gives
// each resource with partition_logs_by_resource_attributes (pdata's xhash.MapHash of its attributes),
// one hex line per resource. test/e2e/otlp-keys.test.ts compares the Worker's keys with it.
package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/xpdata/xhash"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	logs, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, rl := range logs.ResourceLogs().All() {
		h := xhash.MapHash(rl.Resource().Attributes())
		fmt.Println(hex.EncodeToString(h[:]))
	}
}
