package main

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/termhost/termhost/host/mcp"
)

// `termhost view` prints the address of the live view of a `serve --http`
// (issue 21) with the token from the token file, and opens nothing: the
// person opens it in their browser, where the token moves into a cookie
// and out of the address bar.
func viewFlags(fs *flags) func(stdout, stderr io.Writer) error {
	var o httpOptions
	o.register(fs)
	var sess string
	fs.StringVar(&sess, "session", "", "open this session `id` full size")
	return func(stdout, _ io.Writer) error {
		if o.noAuth {
			return usagef("view: --no-auth has no token to put in the address; open http://<addr>%s", mcp.ViewPath)
		}
		addr, err := o.resolve(context.Background())
		if err != nil {
			return err
		}
		file := o.tokenFile
		if file == "" {
			if file, err = defaultTokenFile(); err != nil {
				return err
			}
		}
		token, err := readToken(file)
		if err != nil {
			return fmt.Errorf("%w (start `termhost serve --http` first: it writes the token file)", err)
		}
		q := url.Values{"token": {token}}
		if sess != "" {
			q.Set("session", sess)
		}
		_, err = fmt.Fprintf(stdout, "http://%s%s?%s\n", addr, mcp.ViewPath, q.Encode())
		return err
	}
}
