// Command gendocs writes the error reference generated from the error table
// to the file named by its argument.
package main

import (
	"fmt"
	"os"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(errcode.Markdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
