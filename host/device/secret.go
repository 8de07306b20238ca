package device

import (
	"context"

	"github.com/termhost/termhost/host/session"
)

// Gate decides whether a secret may be typed into a session, from where
// its input goes right now (TRUST-1); nil allows it.
type Gate func(session.Destination) error

// SendSecret types a secret followed by Enter: refused when allow says no
// or the engine does (a plugin not trusted with secrets, the line typed
// before it refused, a terminal known to echo it: session.SendCredential),
// never logged, and from then on masked in every session for the server's
// life (session.SecretSet).
func SendSecret(ctx context.Context, s *session.Session, secret []byte, allow Gate) error {
	return sendCredential(ctx, s, secret, allow, true)
}

// SendUsername types a credential's username as SendSecret types a
// secret, through the same gate and checks, but does not mask it: a
// username is shown by ssh_list_credentials, and masking "root" or
// "admin" in every session for the server's life would hide ordinary
// output.
func SendUsername(ctx context.Context, s *session.Session, name []byte, allow Gate) error {
	return sendCredential(ctx, s, name, allow, false)
}

func sendCredential(ctx context.Context, s *session.Session, secret []byte, allow Gate, mask bool) error {
	if err := session.CheckCredential(secret); err != nil {
		return err
	}
	if allow != nil {
		if err := allow(s.Destination()); err != nil {
			return err
		}
	}
	return s.SendCredential(ctx, secret, mask)
}
