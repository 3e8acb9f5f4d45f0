package gcsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	raw "google.golang.org/api/storage/v1"
	htransport "google.golang.org/api/transport/http"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
)

// errNoCredential is a credential that could not be found or loaded.
type errNoCredential struct{ err error }

func (e *errNoCredential) Error() string { return e.err.Error() }
func (e *errNoCredential) Unwrap() error { return e.err }

// clientFor returns the client, made on first use: an emulator's
// (STORAGE_EMULATOR_HOST, no credentials) or one with application default
// credentials. A credential that cannot be found is errNoCredential, never
// retried. The client does not retry: our retries are bounded by the
// budget and resolve the unknown outcome of a conditional write.
func (s *bucket) clientFor(ctx context.Context) (*raw.Service, error) {
	s.clientMu.Lock()
	defer s.clientMu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	base := http.DefaultTransport
	if t, ok := base.(*http.Transport); ok {
		base = t.Clone()
	}
	var opts []option.ClientOption
	if host := s.getenv(EmulatorEnv); host != "" {
		endpoint := host
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(endpoint, "/")+"/storage/v1/"),
			option.WithHTTPClient(&http.Client{Transport: base}))
	} else {
		creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{raw.DevstorageReadWriteScope}})
		if err != nil {
			return nil, &errNoCredential{err}
		}
		tr, err := htransport.NewTransport(ctx, base, option.WithAuthCredentials(creds))
		if err != nil {
			return nil, &errNoCredential{err}
		}
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: tr}))
	}
	c, err := raw.NewService(ctx, opts...)
	if err != nil {
		return nil, &errNoCredential{err}
	}
	s.client = c
	return c, nil
}

// do runs op as objectstore.Retry does, within the budget.
func (s *bucket) do(ctx context.Context, what string, op func(ctx context.Context) error, resolve func(ctx context.Context) (done bool, err error)) error {
	r := objectstore.Retry{Budget: s.budget, AttemptTimeout: s.attemptTimeout, Transient: transient, Permanent: s.permanent, Exhausted: s.exhausted}
	return r.Do(ctx, what, op, resolve)
}

// exhausted is the error of an operation whose budget ran out on transient
// failures, the last err: STORE_UNAVAILABLE.
func (s *bucket) exhausted(what string, attempts int, err error) error {
	return objectstore.WithCause(errcode.New(errcode.StoreUnavailable, "the GCS store %s could not %s within %s (%d attempts): %s", s.display, what, s.budget, attempts, describe(err)).With("store", s.display), err)
}

// status is the HTTP status of a failed request, 0 without an answer.
func status(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// credentialError reports a credential that was not found or that its
// issuer refused (a token endpoint's 4xx answer).
func credentialError(err error) bool {
	var nc *errNoCredential
	if errors.As(err, &nc) {
		return true
	}
	var ae *auth.Error
	if errors.As(err, &ae) {
		return ae.Response == nil || ae.Response.StatusCode < 500
	}
	return false
}

// transient reports whether a failure may go away by itself: no answer
// (refused, reset, timed out), a 5xx, throttling, or a token endpoint that
// failed on its side. A credential that is missing or refused is not.
func transient(err error) bool {
	switch {
	case objectstore.Decided(err), credentialError(err):
		return false
	}
	switch code := status(err); {
	case code == 0:
		return true
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		return true
	}
	return false
}

// permanent gives a failure retrying cannot change its code: a missing or
// refused credential and 401/403 are STORE_PERMISSION, a missing bucket
// STORE_UNAVAILABLE, any other refusal STORE_REJECTED. The caller's own
// outcomes pass through.
func (s *bucket) permanent(what string, err error) error {
	switch {
	case objectstore.Decided(err):
		return err
	}
	var nc *errNoCredential
	switch code := status(err); {
	case errors.As(err, &nc):
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the GCS store %s has no Google credential: %s", s.display, describe(err)).With("store", s.display), err).
			WithHint(credentialHint)
	case credentialError(err), code == http.StatusUnauthorized:
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the GCS store %s: Google refused the credential: %s", s.display, describe(err)).With("store", s.display), err).
			WithHint(credentialHint)
	case code == http.StatusForbidden:
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the GCS store %s refused to %s: %s", s.display, what, describe(err)).With("store", s.display), err).
			WithHint("Check which principal the credential is (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default login, the metadata server) and its role on the bucket: Sponson needs storage.objects.get, create, delete and list on the prefix (roles/storage.objectUser).")
	case code == http.StatusNotFound:
		return objectstore.WithCause(errcode.New(errcode.StoreUnavailable, "the bucket of the GCS store %s does not exist", s.display).With("store", s.display), err).
			WithHint("Create the bucket, or correct the bucket name in --store.")
	}
	return objectstore.WithCause(errcode.New(errcode.StoreRejected, "the GCS store %s rejected the request to %s: %s", s.display, what, describe(err)).With("store", s.display), err)
}

// describe is a failure in one line: the server's code and message, the
// token endpoint's answer, or the transport's error. None carries a token.
func describe(err error) string {
	var ae *auth.Error
	if errors.As(err, &ae) {
		if ae.Response != nil {
			return fmt.Sprintf("the token endpoint answered %s: %s", ae.Response.Status, strings.TrimSpace(string(ae.Body)))
		}
		return ae.Error()
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		msg := http.StatusText(ge.Code)
		if ge.Message != "" {
			msg += " (" + ge.Message + ")"
		}
		return msg
	}
	var nc *errNoCredential
	if errors.As(err, &nc) {
		return nc.err.Error()
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		return ne.Error() // "dial tcp 127.0.0.1:9000: connect: connection refused"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the attempt's timeout"
	}
	return err.Error()
}

func generation(g int64) string { return strconv.FormatInt(g, 10) }

// headerDate is the server's clock in an answer's headers, or ours.
func (s *bucket) headerDate(h http.Header) time.Time {
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		return t.UTC()
	}
	return s.now().Round(0).UTC()
}

// errDate is the server's clock in a failed request's answer, or ours.
func (s *bucket) errDate(err error) time.Time {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return s.headerDate(ge.Header)
	}
	return s.now().Round(0).UTC()
}

// download reads key, unless its generation is notGen (objectstore.ErrNotModified);
// objectstore.ErrNotFound if it does not exist, with the server's clock.
func (s *bucket) download(ctx context.Context, key string, notGen int64) (objectstore.Object, error) {
	c, err := s.clientFor(ctx)
	if err != nil {
		return objectstore.Object{}, err
	}
	call := c.Objects.Get(s.bucket, key).Context(ctx)
	if notGen != 0 {
		call = call.IfGenerationNotMatch(notGen)
	}
	resp, err := call.Download()
	if err != nil {
		switch status(err) {
		case http.StatusNotFound:
			return objectstore.Object{Date: s.errDate(err)}, objectstore.ErrNotFound
		case http.StatusNotModified:
			return objectstore.Object{}, objectstore.ErrNotModified
		}
		return objectstore.Object{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return objectstore.Object{}, err
	}
	o := objectstore.Object{Data: data, ETag: resp.Header.Get("X-Goog-Generation"), Date: s.headerDate(resp.Header)}
	if o.ETag == "" {
		return objectstore.Object{}, fmt.Errorf("the answer to a read of %s has no generation (X-Goog-Generation)", key)
	}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		o.At = t.UTC()
	}
	if notGen != 0 && o.ETag == generation(notGen) {
		return objectstore.Object{}, objectstore.ErrNotModified // a server that ignored the condition
	}
	return o, nil
}

// Get reads key; objectstore.ErrNotFound if it does not exist. The Date of a 404 is
// returned with it, so an absent pointer still gives the server's clock.
func (s *bucket) Get(ctx context.Context, key string) (objectstore.Object, error) {
	var o objectstore.Object
	err := s.do(ctx, "read "+key, func(ctx context.Context) error {
		var err error
		o, err = s.download(ctx, key, 0)
		return err
	}, nil)
	return o, err
}

// GetIfChanged reads key unless its generation is still etag
// (objectstore.ErrNotModified): a read with ifGenerationNotMatch, whose 304
// carries no body.
func (s *bucket) GetIfChanged(ctx context.Context, key, etag string) (objectstore.Object, error) {
	var not int64
	if etag != "" {
		g, err := strconv.ParseInt(etag, 10, 64)
		if err != nil {
			return objectstore.Object{}, fmt.Errorf("generation %q of %s is not a number", etag, key)
		}
		not = g
	}
	var o objectstore.Object
	err := s.do(ctx, "read "+key, func(ctx context.Context) error {
		var err error
		o, err = s.download(ctx, key, not)
		return err
	}, nil)
	return o, err
}

// upload writes data to key in one request, conditional on ifGen (0: only
// if absent) unless ifGen is nil, and returns the new generation.
func (s *bucket) upload(ctx context.Context, key string, data []byte, ifGen *int64) (int64, error) {
	c, err := s.clientFor(ctx)
	if err != nil {
		return 0, err
	}
	call := c.Objects.Insert(s.bucket, &raw.Object{Name: key}).
		Media(bytes.NewReader(data), googleapi.ContentType("application/octet-stream")).Context(ctx)
	if ifGen != nil {
		call = call.IfGenerationMatch(*ifGen)
	}
	out, err := call.Do()
	if err != nil {
		if status(err) == http.StatusPreconditionFailed {
			return 0, objectstore.ErrPrecondition
		}
		return 0, err
	}
	return out.Generation, nil
}

// Put writes a new body under a fresh name (no condition: nobody else
// writes that name). Retrying it after a lost answer is harmless.
func (s *bucket) Put(ctx context.Context, key string, data []byte) error {
	return s.do(ctx, "write "+key, func(ctx context.Context) error {
		_, err := s.upload(ctx, key, data, nil)
		return err
	}, nil)
}

// PutIf writes key only if its generation is still ifMatch, or only if it
// does not exist when ifMatch is "" (ifGenerationMatch=0); a lost answer is
// resolved from a read of the key (objectstore.Resolve).
func (s *bucket) PutIf(ctx context.Context, key string, data []byte, ifMatch string, landed func([]byte) bool) (etag string, err error) {
	var cond int64 // 0: only if absent
	if ifMatch != "" {
		g, perr := strconv.ParseInt(ifMatch, 10, 64)
		if perr != nil || g <= 0 {
			return "", fmt.Errorf("generation %q of %s is not a number", ifMatch, key)
		}
		cond = g
	}
	op := func(ctx context.Context) error {
		g, err := s.upload(ctx, key, data, &cond)
		if err != nil {
			return err
		}
		etag = generation(g)
		return nil
	}
	resolve := func(ctx context.Context) (bool, error) {
		o, err := s.download(ctx, key, 0)
		done, now, err := objectstore.Resolve(o, err, ifMatch, landed)
		if done && err == nil {
			etag = now
		}
		return done, err
	}
	err = s.do(ctx, "write "+key, op, resolve)
	return etag, err
}

// Delete removes key; a missing key is not an error.
func (s *bucket) Delete(ctx context.Context, key string) error {
	return s.do(ctx, "delete "+key, func(ctx context.Context) error {
		c, err := s.clientFor(ctx)
		if err != nil {
			return err
		}
		err = c.Objects.Delete(s.bucket, key).Context(ctx).Do()
		if status(err) == http.StatusNotFound {
			return nil
		}
		return err
	}, nil)
}

// List returns every object under prefix, 1,000 a request.
func (s *bucket) List(ctx context.Context, prefix string) ([]objectstore.Listed, error) {
	var out []objectstore.Listed
	token := ""
	for {
		var page *raw.Objects
		err := s.do(ctx, "list "+prefix, func(ctx context.Context) error {
			c, err := s.clientFor(ctx)
			if err != nil {
				return err
			}
			page, err = c.Objects.List(s.bucket).Prefix(prefix).PageToken(token).MaxResults(1000).
				Fields("items(name,generation,updated)", "nextPageToken").Context(ctx).Do()
			return err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Items {
			at, _ := time.Parse(time.RFC3339Nano, o.Updated)
			out = append(out, objectstore.Listed{Key: o.Name, ETag: generation(o.Generation), At: at})
		}
		if page.NextPageToken == "" {
			return out, nil
		}
		token = page.NextPageToken
	}
}
