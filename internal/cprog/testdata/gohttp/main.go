// gohttp is a net/http server for published-port tests: it listens on
// the port given (dual-stack), serves /hello, /blob?n=N (N bytes of a
// fixed pattern), /echo (the SHA-256 of the request body) and /hash?mb=N
// (the SHA-256 of N MiB of zeros: CPU for a profile), counts the
// requests it served and prints the count when asked at /quit, then exits.
package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
)

func main() {
	l, err := net.Listen("tcp", ":"+os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var served atomic.Int64
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprintf(w, "hello %s\n", r.URL.Query().Get("i"))
	})
	mux.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i>>10)
		}
		w.Write(b)
	})
	mux.HandleFunc("/hash", func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		n, _ := strconv.Atoi(r.URL.Query().Get("mb"))
		h := sha256.New()
		block := make([]byte, 1<<20)
		for range n {
			h.Write(block)
		}
		fmt.Fprintf(w, "%x\n", h.Sum(nil))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x\n", n, h.Sum(nil))
	})
	mux.HandleFunc("/quit", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "served %d\n", served.Load())
		w.(http.Flusher).Flush() // before main exits
		close(done)
	})
	go http.Serve(l, mux)
	<-done
	fmt.Printf("gohttp served %d requests\n", served.Load())
}
