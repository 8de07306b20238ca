package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/termhost/termhost/host/mcp"
)

// `termhost view` prints a one-time address of the live view of a running
// `serve --http` (issue 21, issue 33 item 3), and opens nothing. It asks
// the server for a login code with the token from the token file; the
// address carries the code, not the token, in its fragment: it works
// once, within a minute, and the page that opens it keeps the key it gets
// for it in memory only.
func viewFlags(fs *flags) func(stdout, stderr io.Writer) error {
	var o httpOptions
	o.register(fs)
	var sess string
	fs.StringVar(&sess, "session", "", "open this session `id` full size")
	return func(stdout, stderr io.Writer) error {
		if o.noAuth {
			return usagef("view: --no-auth has no token to put in the address; open http://<addr>%s", mcp.ViewPath)
		}
		ctx := context.Background()
		addr, err := o.resolve(ctx)
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
		code, ttl, err := viewCode(ctx, addr, token, file)
		if err != nil {
			return err
		}
		link := "http://" + addr + mcp.ViewPath
		if sess != "" {
			link += "?" + url.Values{"session": {sess}}.Encode()
		}
		if _, err := fmt.Fprintf(stdout, "%s#login=%s\n", link, code); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Open it within %d s: it works once. The page keeps its key in memory only, "+
			"so a reload or another tab needs a new link: run `termhost view` again.\n", ttl)
		return nil
	}
}

// viewCode asks the server at addr for a login code of the view.
func viewCode(ctx context.Context, addr, token, file string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+mcp.ViewCodePath, nil)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// No proxy: the token goes to the server itself only.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", 0, fmt.Errorf("no termhost answers at %s (%v): start `termhost serve --http` first, or name its address with --http", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "", 0, fmt.Errorf("the server at %s refused the token of %s: is it another server's? (--token-file names the file)", addr, file)
	case resp.StatusCode != http.StatusOK:
		return "", 0, fmt.Errorf("the server at %s answered %s: %s (is it termhost serve --http, of this version?)", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		Code      string `json:"code"`
		ExpiresIn int    `json:"expires_in_s"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Code == "" {
		return "", 0, fmt.Errorf("the server at %s answered no login code: %.200s", addr, body)
	}
	return out.Code, out.ExpiresIn, nil
}
