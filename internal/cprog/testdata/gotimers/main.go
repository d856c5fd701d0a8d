package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"
)

// What the Go runtime does beside computing: goroutines that sleep and
// wake on timers (its netpoller: epoll_pwait, an eventfd to break a
// wait), channels and select with time.After, a ticker, a file read with
// os.ReadFile of its own executable, and garbage collections under allocation. Prints what it
// computed, which does not depend on timing.
func main() {
	var wg sync.WaitGroup
	results := make(chan string, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				time.Sleep(time.Duration(w+1) * time.Millisecond)
			}
			results <- fmt.Sprintf("sleeper %d woke 5 times", w)
		}(w)
	}
	go func() { wg.Wait(); close(results) }()
	var lines []string
	for r := range results {
		lines = append(lines, r)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}

	ticker := time.NewTicker(2 * time.Millisecond)
	ticks := 0
	timeout := time.After(time.Second)
loop:
	for {
		select {
		case <-ticker.C:
			if ticks++; ticks == 10 {
				break loop
			}
		case <-timeout:
			fmt.Println("timed out")
			os.Exit(1)
		}
	}
	ticker.Stop()
	fmt.Println("ticks", ticks)

	data, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		fmt.Println("read:", err)
		os.Exit(1)
	}
	fmt.Printf("file %d bytes sha256 %x\n", len(data), sha256.Sum256(data))

	var keep [][]byte
	for i := 0; i < 2000; i++ {
		keep = append(keep, make([]byte, 64<<10))
		if len(keep) > 64 {
			keep = keep[1:]
		}
	}
	runtime.GC()
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	fmt.Println("gc ran:", st.NumGC > 0, "kept", len(keep))
}
