// Command getpass is a test app that reads a password as getpass(3) does
// (echo off, one line), then prints it back: at once split in two writes
// (-split, that far apart), and once more after -delay. It is what a
// careless or hostile program does with a secret typed into it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	delay := flag.Duration("delay", 0, "print the password again after this long")
	split := flag.Duration("split", 0, "print it in two writes this far apart")
	flag.Parse()
	// Echo off before the prompt, as getpass(3) does: a prompt on the
	// screen means the terminal is ready for the secret.
	t, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		fmt.Println("not a terminal:", err)
		os.Exit(2)
	}
	old := *t
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON
	unix.IoctlSetTermios(0, unix.TCSETS, t)
	fmt.Print("Password: ")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	unix.IoctlSetTermios(0, unix.TCSETS, &old)
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	fmt.Printf("\nread %d bytes\n", len(line))
	if *split > 0 {
		half := len(line) / 2
		fmt.Printf("split:%s", line[:half])
		time.Sleep(*split)
		fmt.Printf("%s:\n", line[half:])
	}
	if *delay > 0 {
		// Some other output first, so the copy is not the first thing
		// printed after a while.
		tick := min(*delay/2, 500*time.Millisecond)
		time.Sleep(*delay - tick)
		fmt.Println("tick")
		time.Sleep(tick)
		fmt.Printf("later:%s:\n", line)
	}
	fmt.Println("done")
	time.Sleep(time.Hour)
}
