package main

import (
	"fmt"
	"sync"
)

// Goroutines that compute for longer than the runtime's 10 ms preemption
// slice, share a counter under a mutex, and report through a channel.
func main() {
	const workers, rounds = 4, 50
	var mu sync.Mutex
	total := uint64(0)
	results := make(chan uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sum := uint64(0)
			for r := 0; r < rounds; r++ {
				x := uint64(w*rounds + r)
				for i := 0; i < 2_000_000; i++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				sum += x >> 60
				mu.Lock()
				total++
				mu.Unlock()
			}
			results <- sum
		}(w)
	}
	wg.Wait()
	close(results)
	all := uint64(0)
	for s := range results {
		all += s
	}
	fmt.Printf("rounds %d checksum %d\n", total, all)
}
