package s3store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithymiddleware "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store/objectstore"
)

// errNoCredential is a credential the AWS chain could not find, or that its
// source (STS, SSO, the instance metadata) refused.
type errNoCredential struct{ err error }

func (e *errNoCredential) Error() string { return e.err.Error() }
func (e *errNoCredential) Unwrap() error { return e.err }

// credentialSource marks the errors of the chain's credential provider, so
// that a missing credential is not retried as if it were the network.
type credentialSource struct{ aws.CredentialsProvider }

func (c credentialSource) Retrieve(ctx context.Context) (aws.Credentials, error) {
	creds, err := c.CredentialsProvider.Retrieve(ctx)
	if err != nil {
		return creds, &errNoCredential{err}
	}
	return creds, nil
}

// refusedCredential reports S3's answers to a credential it does not take.
func refusedCredential(err error) bool {
	switch apiCode(err) {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
		return true
	}
	return false
}

// do runs op as objectstore.Retry does, within the budget.
func (s *bucket) do(ctx context.Context, what string, op func(ctx context.Context) error, resolve func(ctx context.Context) (done bool, err error)) error {
	r := objectstore.Retry{Budget: s.budget, AttemptTimeout: s.attemptTimeout, Transient: transient, Permanent: s.permanent, Exhausted: s.exhausted}
	return r.Do(ctx, what, op, resolve)
}

// exhausted is the error of an operation whose budget ran out on transient
// failures, the last err: STORE_CONTENDED when that was a conflict of
// concurrent conditional writes, else STORE_UNAVAILABLE.
func (s *bucket) exhausted(what string, attempts int, err error) error {
	code := errcode.StoreUnavailable
	if conflict(err) {
		code = errcode.StoreContended
	}
	return objectstore.WithCause(errcode.New(code, "the S3 store %s could not %s within %s (%d attempts): %s", s.display, what, s.budget, attempts, describe(err)).With("store", s.display), err)
}

// status is the HTTP status of a failed request, 0 without an answer.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// conflict reports a 409 ConditionalRequestConflict (or OperationAborted): a
// concurrent conditional write to the same key was in flight.
func conflict(err error) bool {
	return status(err) == http.StatusConflict || apiCode(err) == "ConditionalRequestConflict" || apiCode(err) == "OperationAborted"
}

// transient reports whether a failure may go away by itself: no answer
// (refused, reset, timed out), a 5xx, throttling, or a 409 conflict of
// concurrent conditional writes.
func transient(err error) bool {
	var nc *errNoCredential
	switch {
	case objectstore.Decided(err), refusedCredential(err):
		return false
	case errors.As(err, &nc):
		// The credential's source answered with a failure that may pass
		// (STS or SSO throttled or down); anything else, no credential
		// found included, is not the network. The instance metadata
		// client retries its own requests.
		code := status(err)
		return code >= 500 || code == http.StatusTooManyRequests
	case conflict(err):
		return true
	}
	switch code := status(err); {
	case code == 0:
		return true
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		return true
	}
	switch apiCode(err) {
	case "SlowDown", "RequestTimeout", "RequestTimeTooSkewed", "InternalError", "ServiceUnavailable":
		return true
	}
	return false
}

// permanent gives a failure retrying cannot change its code: 403 is
// STORE_PERMISSION, a missing bucket STORE_UNAVAILABLE, any other refusal
// STORE_REJECTED. The caller's own outcomes pass through.
func (s *bucket) permanent(what string, err error) error {
	switch {
	case objectstore.Decided(err):
		return err
	}
	code := status(err)
	var nc *errNoCredential
	switch {
	case errors.As(err, &nc):
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the S3 store %s has no AWS credential: %s", s.display, describe(err)).With("store", s.display), err).
			WithHint(credentialHint)
	case refusedCredential(err):
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the S3 store %s: the server refused the AWS credential: %s", s.display, describe(err)).With("store", s.display), err).
			WithHint(credentialHint)
	case code == http.StatusForbidden || apiCode(err) == "AccessDenied":
		return objectstore.WithCause(errcode.New(errcode.StorePermission, "the S3 store %s refused to %s: %s", s.display, what, describe(err)).With("store", s.display), err).
			WithHint("Check the credentials the AWS chain found (AWS_PROFILE, AWS_ACCESS_KEY_ID) and the bucket policy: Sponson needs s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket on the prefix.")
	case apiCode(err) == "NoSuchBucket":
		return objectstore.WithCause(errcode.New(errcode.StoreUnavailable, "the bucket of the S3 store %s does not exist", s.display).With("store", s.display), err).
			WithHint("Create the bucket, or correct the bucket name and the endpoint in --store.")
	}
	return objectstore.WithCause(errcode.New(errcode.StoreRejected, "the S3 store %s rejected the request to %s: %s", s.display, what, describe(err)).With("store", s.display), err)
}

// describe is a failure in one line: the server's code and message, or the
// transport's error. Neither carries credentials (signatures are not echoed).
func describe(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		msg := ae.ErrorCode()
		if m := ae.ErrorMessage(); m != "" {
			msg += ": " + m
		}
		if code := status(err); code != 0 {
			msg = http.StatusText(code) + " (" + msg + ")"
		}
		return msg
	}
	if code := status(err); code != 0 {
		return http.StatusText(code)
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		return ne.Error() // "dial tcp 127.0.0.1:9000: connect: connection refused"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within the attempt's timeout"
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		return oe.Err.Error()
	}
	return err.Error()
}

// dateOf reads the server's clock from a response.
func (s *bucket) dateOf(md smithymiddleware.Metadata) time.Time {
	if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && raw != nil {
		return s.headerDate(raw.Header)
	}
	return s.now().UTC()
}

func (s *bucket) headerDate(h http.Header) time.Time {
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		return t.UTC()
	}
	return s.now().Round(0).UTC()
}

// errDate reads the server's clock from a failed request's answer.
func (s *bucket) errDate(err error) (time.Time, bool) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		if t, perr := http.ParseTime(re.Response.Header.Get("Date")); perr == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func normETag(e *string) string {
	v := aws.ToString(e)
	v = strings.TrimPrefix(v, "W/")
	return strings.Trim(v, `"`)
}

// Get reads key; objectstore.ErrNotFound if it does not exist. The Date of
// a 404 is returned with it, so an absent pointer still gives the server's
// clock.
func (s *bucket) Get(ctx context.Context, key string) (objectstore.Object, error) {
	var o objectstore.Object
	err := s.do(ctx, "read "+key, func(ctx context.Context) error {
		var err error
		o, err = s.read(ctx, key)
		return err
	}, nil)
	return o, err
}

// read is one attempt of Get.
func (s *bucket) read(ctx context.Context, key string) (objectstore.Object, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		if status(err) == http.StatusNotFound || apiCode(err) == "NoSuchKey" {
			if apiCode(err) == "NoSuchBucket" {
				return objectstore.Object{}, err
			}
			date, _ := s.errDate(err)
			if date.IsZero() {
				date = s.now().Round(0).UTC()
			}
			return objectstore.Object{Date: date}, objectstore.ErrNotFound
		}
		return objectstore.Object{}, err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return objectstore.Object{}, err
	}
	return objectstore.Object{Data: data, ETag: normETag(out.ETag), Date: s.dateOf(out.ResultMetadata), At: aws.ToTime(out.LastModified)}, nil
}

// GetIfChanged reads key unless its ETag is still etag
// (objectstore.ErrNotModified).
func (s *bucket) GetIfChanged(ctx context.Context, key, etag string) (objectstore.Object, error) {
	var o objectstore.Object
	err := s.do(ctx, "read "+key, func(ctx context.Context) error {
		in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}
		if etag != "" {
			in.IfNoneMatch = aws.String(`"` + etag + `"`)
		}
		out, err := s.client.GetObject(ctx, in)
		if err != nil {
			switch {
			case status(err) == http.StatusNotModified || apiCode(err) == "NotModified":
				return objectstore.ErrNotModified
			case status(err) == http.StatusNotFound && apiCode(err) != "NoSuchBucket":
				return objectstore.ErrNotFound
			}
			return err
		}
		defer out.Body.Close()
		data, err := io.ReadAll(out.Body)
		if err != nil {
			return err
		}
		o = objectstore.Object{Data: data, ETag: normETag(out.ETag), Date: s.dateOf(out.ResultMetadata)}
		return nil
	}, nil)
	return o, err
}

// Put writes a new body under a fresh name (no condition: nobody else
// writes that name). Retrying it after a lost answer is harmless.
func (s *bucket) Put(ctx context.Context, key string, data []byte) error {
	return s.do(ctx, "write "+key, func(ctx context.Context) error {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
		return err
	}, nil)
}

// PutIf writes key only if its ETag is still ifMatch (If-Match), or only if
// it does not exist when ifMatch is "" (If-None-Match: *); a lost answer is
// resolved from a read of the key (objectstore.Resolve).
func (s *bucket) PutIf(ctx context.Context, key string, data []byte, ifMatch string, landed func([]byte) bool) (etag string, err error) {
	op := func(ctx context.Context) error {
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
		if ifMatch == "" {
			in.IfNoneMatch = aws.String("*")
		} else {
			in.IfMatch = aws.String(`"` + ifMatch + `"`)
		}
		out, err := s.client.PutObject(ctx, in)
		if err != nil {
			if status(err) == http.StatusPreconditionFailed || apiCode(err) == "PreconditionFailed" {
				return objectstore.ErrPrecondition
			}
			return err
		}
		etag = normETag(out.ETag)
		return nil
	}
	resolve := func(ctx context.Context) (bool, error) {
		o, err := s.read(ctx, key)
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
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
		if status(err) == http.StatusNotFound {
			return nil
		}
		return err
	}, nil)
}

// List returns every object under prefix, 1,000 a request.
func (s *bucket) List(ctx context.Context, prefix string) ([]objectstore.Listed, error) {
	var out []objectstore.Listed
	var token *string
	for {
		var page *s3.ListObjectsV2Output
		err := s.do(ctx, "list "+prefix, func(ctx context.Context) error {
			var err error
			page, err = s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix, ContinuationToken: token})
			return err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, objectstore.Listed{Key: aws.ToString(o.Key), ETag: normETag(o.ETag), At: aws.ToTime(o.LastModified)})
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return out, nil
		}
		token = page.NextContinuationToken
	}
}
