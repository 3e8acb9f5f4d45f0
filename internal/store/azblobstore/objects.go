package azblobstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
)

// errNoCredential is a credential that could not be found or loaded.
type errNoCredential struct{ err error }

func (e *errNoCredential) Error() string { return e.err.Error() }
func (e *errNoCredential) Unwrap() error { return e.err }

// clientFor returns the container's client, made on first use: with the
// shared key of AZURE_STORAGE_KEY, else DefaultAzureCredential. The SDK
// retries nothing (ours are bounded by the budget and resolve the unknown
// outcome of a conditional write) and sends no telemetry header.
func (s *bucket) clientFor(context.Context) (*container.Client, error) {
	s.clientMu.Lock()
	defer s.clientMu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:     policy.RetryOptions{MaxRetries: -1},
		Telemetry: policy.TelemetryOptions{Disabled: true},
	}}
	u := s.endpoint + "/" + s.container
	var c *container.Client
	if key := s.getenv(KeyEnv); key != "" {
		cred, err := container.NewSharedKeyCredential(s.account, key)
		if err != nil {
			return nil, &errNoCredential{fmt.Errorf("%s does not hold an account key: %w", KeyEnv, err)}
		}
		if c, err = container.NewClientWithSharedKeyCredential(u, cred, opts); err != nil {
			return nil, err
		}
	} else {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, &errNoCredential{err}
		}
		if c, err = container.NewClient(u, cred, opts); err != nil {
			return nil, err
		}
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
	return objectstore.WithCause(errcode.New(errcode.StoreUnavailable, "the Azure store %s could not %s within %s (%d attempts): %s", s.display, what, s.budget, attempts, describe(err)).With("store", s.display), err)
}

func respErr(err error) *azcore.ResponseError {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// status is the HTTP status of a failed request, 0 without an answer.
func status(err error) int {
	if re := respErr(err); re != nil {
		return re.StatusCode
	}
	return 0
}

func errorCode(err error) string {
	if re := respErr(err); re != nil {
		return re.ErrorCode
	}
	return ""
}

// credentialError reports a credential that was not found, that its
// issuer refused, or that the service refused (a shared key that signs
// wrong).
func credentialError(err error) bool {
	var nc *errNoCredential
	var af *azidentity.AuthenticationFailedError
	switch {
	case errors.As(err, &nc):
		return true
	case errors.As(err, &af):
		return af.RawResponse == nil || af.RawResponse.StatusCode < 500
	}
	return errorCode(err) == "AuthenticationFailed" || status(err) == http.StatusUnauthorized
}

// transient reports whether a failure may go away by itself: no answer, a
// 5xx, throttling. A credential that is missing or refused is not.
func transient(err error) bool {
	switch {
	case objectstore.Decided(err), credentialError(err):
		return false
	}
	switch code := status(err); {
	case code == 0:
		// No answer, or a credential source that could not answer: only
		// the network's errors are retried.
		var ne net.Error
		return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		return true
	}
	return false
}

// permanent gives a failure retrying cannot change its code.
func (s *bucket) permanent(what string, err error) error {
	switch {
	case objectstore.Decided(err):
		return err
	}
	var nc *errNoCredential
	switch code := status(err); {
	case errors.As(err, &nc):
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the Azure store %s has no Azure credential: %s", s.display, describe(err)).With("store", s.display), err).
			WithHint(credentialHint)
	case credentialError(err):
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the Azure store %s: Azure refused the credential: %s", s.display, describe(err)).With("store", s.display), err).
			WithHint(credentialHint)
	case code == http.StatusForbidden:
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the Azure store %s refused to %s: %s", s.display, what, describe(err)).With("store", s.display), err).
			WithHint("Check the credential and its role on the container: Sponson needs to read, write, delete and list blobs under the prefix (Storage Blob Data Contributor). " + credentialHint)
	case errorCode(err) == "ContainerNotFound":
		return objectstore.WithCause(errcode.New(errcode.StoreUnavailable, "the container of the Azure store %s does not exist", s.display).With("store", s.display), err).
			WithHint("Create the container, or correct the account and container in --store.")
	}
	return objectstore.WithCause(errcode.New(errcode.StoreRejected, "the Azure store %s rejected the request to %s: %s", s.display, what, describe(err)).With("store", s.display), err)
}

// describe is a failure in one line: the service's status and code, or the
// transport's error. None carries a key or a token.
func describe(err error) string {
	if re := respErr(err); re != nil {
		msg := http.StatusText(re.StatusCode)
		if re.ErrorCode != "" {
			msg += " (" + re.ErrorCode + ")"
		}
		return msg
	}
	var nc *errNoCredential
	if errors.As(err, &nc) {
		return nc.err.Error()
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		return ne.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the attempt's timeout"
	}
	// The SDK's renderings run over several lines.
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}

func (s *bucket) dateOf(t *time.Time) time.Time {
	if t != nil && !t.IsZero() {
		return t.UTC()
	}
	return s.now().Round(0).UTC()
}

func (s *bucket) errDate(err error) time.Time {
	if re := respErr(err); re != nil && re.RawResponse != nil {
		if t, perr := http.ParseTime(re.RawResponse.Header.Get("Date")); perr == nil {
			return t.UTC()
		}
	}
	return s.now().Round(0).UTC()
}

// etagOf is an ETag without its quotes: headers quote it, listings do not.
func etagOf(e *azcore.ETag) string {
	if e == nil {
		return ""
	}
	return strings.Trim(strings.TrimPrefix(string(*e), "W/"), `"`)
}

// quoted is the ETag as a condition header carries it.
func quoted(etag string) *azcore.ETag {
	e := azcore.ETag(`"` + etag + `"`)
	return &e
}

// download reads key unless its ETag is still notETag (objectstore.ErrNotModified).
func (s *bucket) download(ctx context.Context, key, notETag string) (objectstore.Object, error) {
	c, err := s.clientFor(ctx)
	if err != nil {
		return objectstore.Object{}, err
	}
	var o blob.DownloadStreamOptions
	if notETag != "" {
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: quoted(notETag)}}
	}
	resp, err := c.NewBlobClient(key).DownloadStream(ctx, &o)
	if err != nil {
		switch {
		case status(err) == http.StatusNotModified:
			return objectstore.Object{}, objectstore.ErrNotModified
		case status(err) == http.StatusNotFound && errorCode(err) != "ContainerNotFound":
			return objectstore.Object{Date: s.errDate(err)}, objectstore.ErrNotFound
		}
		return objectstore.Object{}, err
	}
	if resp.Body == nil {
		// The SDK answers a 304 without an error and without a body.
		if notETag != "" {
			return objectstore.Object{}, objectstore.ErrNotModified
		}
		return objectstore.Object{}, fmt.Errorf("the read of %s answered without a body", key)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return objectstore.Object{}, err
	}
	out := objectstore.Object{Data: data, ETag: etagOf(resp.ETag), Date: s.dateOf(resp.Date)}
	if notETag != "" && out.ETag == notETag {
		return objectstore.Object{}, objectstore.ErrNotModified
	}
	if resp.LastModified != nil {
		out.At = resp.LastModified.UTC()
	}
	return out, nil
}

// Get reads key; objectstore.ErrNotFound if it does not exist, with the server's clock.
func (s *bucket) Get(ctx context.Context, key string) (objectstore.Object, error) {
	var o objectstore.Object
	err := s.do(ctx, "read "+key, func(ctx context.Context) error {
		var err error
		o, err = s.download(ctx, key, "")
		return err
	}, nil)
	return o, err
}

// GetIfChanged reads key unless its ETag is still etag
// (objectstore.ErrNotModified).
func (s *bucket) GetIfChanged(ctx context.Context, key, etag string) (objectstore.Object, error) {
	var o objectstore.Object
	err := s.do(ctx, "read "+key, func(ctx context.Context) error {
		var err error
		o, err = s.download(ctx, key, etag)
		return err
	}, nil)
	return o, err
}

// upload writes data to key in one request: only if absent when ifMatch is
// "" and conditional is set, only if its ETag is ifMatch otherwise.
func (s *bucket) upload(ctx context.Context, key string, data []byte, conditional bool, ifMatch string) (string, error) {
	c, err := s.clientFor(ctx)
	if err != nil {
		return "", err
	}
	var o blockblob.UploadOptions
	if conditional {
		m := &blob.ModifiedAccessConditions{}
		if ifMatch == "" {
			star := azcore.ETagAny
			m.IfNoneMatch = &star
		} else {
			m.IfMatch = quoted(ifMatch)
		}
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: m}
	}
	resp, err := c.NewBlockBlobClient(key).Upload(ctx, nopCloser{bytes.NewReader(data)}, &o)
	if err != nil {
		if status(err) == http.StatusPreconditionFailed || errorCode(err) == "BlobAlreadyExists" || errorCode(err) == "ConditionNotMet" {
			return "", objectstore.ErrPrecondition
		}
		return "", err
	}
	return etagOf(resp.ETag), nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// Put writes a new body under a fresh name (no condition).
func (s *bucket) Put(ctx context.Context, key string, data []byte) error {
	return s.do(ctx, "write "+key, func(ctx context.Context) error {
		_, err := s.upload(ctx, key, data, false, "")
		return err
	}, nil)
}

// PutIf writes key only if its ETag is still ifMatch (If-Match), or only if
// it does not exist when ifMatch is "" (If-None-Match: *); a lost answer is
// resolved from a read of the key (objectstore.Resolve).
func (s *bucket) PutIf(ctx context.Context, key string, data []byte, ifMatch string, landed func([]byte) bool) (etag string, err error) {
	op := func(ctx context.Context) error {
		e, err := s.upload(ctx, key, data, true, ifMatch)
		if err != nil {
			return err
		}
		etag = e
		return nil
	}
	resolve := func(ctx context.Context) (bool, error) {
		o, err := s.download(ctx, key, "")
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
		_, err = c.NewBlobClient(key).Delete(ctx, nil)
		if status(err) == http.StatusNotFound && errorCode(err) != "ContainerNotFound" {
			return nil
		}
		return err
	}, nil)
}

// List returns every blob under prefix, 1,000 a request.
func (s *bucket) List(ctx context.Context, prefix string) ([]objectstore.Listed, error) {
	var out []objectstore.Listed
	var marker *string
	for {
		var page container.ListBlobsFlatResponse
		err := s.do(ctx, "list "+prefix, func(ctx context.Context) error {
			c, err := s.clientFor(ctx)
			if err != nil {
				return err
			}
			n := int32(1000)
			pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Marker: marker, MaxResults: &n})
			page, err = pager.NextPage(ctx)
			return err
		}, nil)
		if err != nil {
			return nil, err
		}
		if page.Segment != nil {
			for _, b := range page.Segment.BlobItems {
				if b == nil || b.Name == nil || b.Properties == nil {
					continue
				}
				l := objectstore.Listed{Key: *b.Name, ETag: etagOf(b.Properties.ETag)}
				if b.Properties.LastModified != nil {
					l.At = b.Properties.LastModified.UTC()
				}
				out = append(out, l)
			}
		}
		if page.NextMarker == nil || *page.NextMarker == "" {
			return out, nil
		}
		marker = page.NextMarker
	}
}
