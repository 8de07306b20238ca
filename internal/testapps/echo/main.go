// Command echo is a test app: line-oriented, it prints "echo> ", answers
// each line with "you said: <line>", and exits 0 on "quit" or end of input.
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	for {
		fmt.Print("echo> ")
		if !in.Scan() {
			return
		}
		if in.Text() == "quit" {
			return
		}
		fmt.Printf("you said: %s\n", in.Text())
	}
}
